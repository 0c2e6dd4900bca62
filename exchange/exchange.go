// Package exchange defines what hoox needs from a trading venue: place one
// order under a client order ID, and find it again by that ID. The gateway's
// exactly-once guarantee rests on the second half: after a lost answer, the
// order is looked up, never placed twice.
package exchange

import (
	"context"
	"errors"

	"github.com/shopspring/decimal"
)

// Order is one order as the gateway sends it to a venue. Quantities and
// prices are exact decimals so that nothing is rounded through a float on the
// way to the venue.
type Order struct {
	// ClientOrderID is derived from the trace ID; it is what lets a retry
	// adopt the order a previous attempt placed.
	ClientOrderID string
	// Symbol is upper-case, as the signal validator stored it.
	Symbol string
	// Action is the signal's action: buy, sell, long, short, close_long,
	// close_short or close.
	Action string
	// Side is "buy" or "sell"; "" for close, where the venue decides from
	// the position it holds.
	Side string
	// ReduceOnly asks the venue to refuse an order that would open or grow a
	// position (close_long, close_short, close).
	ReduceOnly bool
	// OrderType is "market" or "limit".
	OrderType string
	// Quantity is always greater than zero.
	Quantity decimal.Decimal
	// Price is the limit price, or for a market order the price the signal
	// quoted; invalid when not given.
	Price decimal.NullDecimal
	// Leverage is 1–125, or 0 when the signal gave none.
	Leverage int
	// Test routes the order to paper or testnet; live and test books never mix.
	Test bool
}

// Status is an order's state at the venue, in the words the orders table uses.
type Status string

// The states an order can be in. A rejected order is final: the venue keeps
// nothing and will not fill it later.
const (
	StatusFilled   Status = "filled"
	StatusOpen     Status = "open"
	StatusRejected Status = "rejected"
)

// Report is the venue's answer about one order.
type Report struct {
	// ExchangeOrderID is the venue's own ID; empty when rejected.
	ExchangeOrderID string
	// Side is the side actually executed, resolved from the position for
	// close.
	Side string
	// Status is filled, open or rejected.
	Status Status
	// FillPrice is set when the order filled.
	FillPrice decimal.NullDecimal
	// Reason says why the venue refused the order, when it did.
	Reason string
}

// Venue is one exchange account. Implementations must be safe for concurrent
// use: many signals are dispatched at once.
type Venue interface {
	// Place sends one order. A refusal for good (bad symbol, no balance, no
	// position to close) is a Report with Status rejected and a nil error;
	// an error means the order's fate is not known to be final (see
	// ErrUnreachable and ErrUnknownOutcome).
	Place(ctx context.Context, o Order) (Report, error)
	// Lookup finds an order by client order ID; ErrNotFound when the venue
	// holds none.
	Lookup(ctx context.Context, clientOrderID string) (Report, error)
}

// Errors a Venue returns. The gateway branches on them with errors.Is, so
// adapters wrap their transport errors in one of these.
var (
	// ErrUnreachable means nothing was sent: it is safe to roll back and let
	// the sender retry.
	ErrUnreachable = errors.New("exchange unreachable: order not sent")
	// ErrUnknownOutcome means the order was sent but the answer was lost
	// (timeout, 5xx): the order may exist, and only a lookup can tell.
	ErrUnknownOutcome = errors.New("exchange outcome unknown: order may exist")
	// ErrNotFound means the venue holds no order under that client order ID.
	ErrNotFound = errors.New("order not found at exchange")
	// ErrDuplicateClientOrderID means the venue already holds an order with
	// this client order ID; the caller adopts it with Lookup.
	ErrDuplicateClientOrderID = errors.New("exchange already holds an order with this client order id")
)
