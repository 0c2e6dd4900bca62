// Package exchange defines what hoox needs from a trading venue: place one
// order under a client order ID, and find it again by that ID. The gateway's
// exactly-once guarantee rests on the second half: after a lost answer, the
// order is looked up, never placed twice.
package exchange

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

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
	// Partial marks a close (close, close_long, close_short) of Quantity
	// only — a percent_of_position exit — rather than of the whole
	// position: the venue sends a reduce-only order for Quantity (at most
	// the position) on Side, and refuses it (no position to close,
	// nothing sent) when Side no longer reduces the position it reads at
	// send time: a part of a split close or a share sized before the
	// intent never closes a position that turned the other way since.
	Partial bool `json:",omitempty"`
	// Sizing says how Quantity was resolved from the signal's quantity
	// type; nil for a base quantity.
	Sizing *Sizing `json:",omitempty"`
	// Split, on the first part of a close split over the venue's maximum
	// market quantity, records the position read and the plan (see
	// SplitClose); nil otherwise.
	Split *Split `json:",omitempty"`
	// ExitCaps, on an entry with exits that a venue caps per symbol, are
	// the caps read before the intent and what the exits add (see
	// ExitCapper); nil otherwise.
	ExitCaps []ExitCap `json:",omitempty"`
	// Legs are the signal's further orders (the other parts of a split
	// close), planned once with this order, the primary, and stored with
	// it in its intent, so every recovery path places exactly these. Each
	// has its own client order ID and is placed only after the primary
	// filled.
	Legs []Leg `json:",omitempty"`
	// TakeProfit, StopLoss and TrailingStop are exits attached to the
	// entry (nil: none). The gateway resolves a percent target to a price
	// once, before the intent is written, on a venue that takes them on
	// the order; a venue that places them as separate orders after the
	// fill may resolve them from the fill price instead. See
	// [AttachmentCapable] and [Attached.Resolve].
	TakeProfit   *Attached `json:",omitempty"`
	StopLoss     *Attached `json:",omitempty"`
	TrailingStop *Attached `json:",omitempty"`
	// Exit, on a leg, makes the order a conditional exit of its own
	// (RoleTakeProfit, RoleStopLoss) whose trigger is the matching
	// attached field: a venue that takes exits as separate orders
	// (Binance USDⓈ-M's algo orders) places it as one. Empty for a plain
	// order.
	Exit string `json:",omitempty"`
	// Ledger, set by the gateway for an order on a spot venue, counts the
	// order's fills in its strategy's spot ledger (see Ledger); nil on
	// derivatives and paper. It travels in the intent, so every path that
	// records the order counts it the same way. Venues ignore it.
	Ledger *Ledger `json:",omitempty"`
	// Strategy is the signal's strategy field ("" when it named none), set
	// by the gateway on every order it places and copied onto the exits
	// planned from it: the order row records it (orders.strategy), and a
	// cancel that names a strategy takes only that strategy's orders and
	// exits. It travels in the intent and the leg, so every path that
	// records the order records it alike. nil on an intent or leg written
	// before it existed. Venues ignore it.
	Strategy *string `json:",omitempty"`
	// PositionBefore, on a derivatives entry whose exits are placed as
	// their own reduce-only orders once it filled (and on those exits),
	// is the position the venue held on the symbol when the gateway
	// planned the entry, in base units, signed (short < 0), read once
	// before the intent. The exits cover only what the entry opened or
	// added on its own side (OpenedBy): an entry that only reduced or
	// closed a position on the other side — a strategy's exit sent
	// through an entry template — gets none, since reduce-only exits on
	// its side would rest on a flat position, or protect the other one.
	// It travels in the intent, so a resend, a reconcile and the leg
	// runner decide alike. nil when not read (spot, a venue that cannot
	// say, an intent written before it existed): the exits then cover the
	// whole fill.
	PositionBefore *decimal.Decimal `json:",omitempty"`
}

// Ledger is how a spot order counts in the per-strategy spot ledger: what
// a strategy bought through hoox, which a spot close sells (and nothing
// else the account holds).
type Ledger struct {
	// Strategy is the signal's strategy field ("" when absent).
	Strategy string `json:"strategy"`
	// Symbol is the venue's spelling of the symbol, as the order row
	// stores it.
	Symbol string `json:"symbol"`
	// BaseAsset is the coin the symbol trades (BTC for BTCUSDT): a fee
	// charged in it reduces what a buy received.
	BaseAsset string `json:"base_asset"`
}

// SpotTrader is implemented by a venue that may trade spot. The gateway
// asks it which symbol and base asset an order trades, to count the
// order's fills in the strategy's ledger and to size a spot close from it.
type SpotTrader interface {
	// SpotSymbol returns the venue's symbol and base asset for symbol, and
	// spot false when the venue trades derivatives (nothing to count). A
	// symbol the venue does not list is spot false too: its order is
	// refused when placed. An error means nothing was sent (it wraps
	// ErrUnreachable).
	SpotSymbol(ctx context.Context, symbol string) (venueSymbol, baseAsset string, spot bool, err error)
}

// Status is an order's state at the venue, in the words the orders table uses.
type Status string

// The states an order can be in. A rejected order is final: the venue keeps
// nothing and will not fill it later.
const (
	StatusFilled   Status = "filled"
	StatusOpen     Status = "open"
	StatusRejected Status = "rejected"
	// StatusCancelled: the order was cancelled (by hoox's cancel action,
	// by hand, or by the venue) before it filled completely;
	// FilledQuantity says what executed before that.
	StatusCancelled Status = "cancelled"
	// StatusExpired: the venue ended the order on its own (time in force,
	// a self-trade prevention, an IOC remainder) before it filled
	// completely.
	StatusExpired Status = "expired"
)

// Final reports whether an order in status s will never change again at
// the venue: everything but open.
func (s Status) Final() bool { return s != StatusOpen && s != "" }

// Report is the venue's answer about one order.
type Report struct {
	// ExchangeOrderID is the venue's own ID; empty when rejected.
	ExchangeOrderID string
	// Symbol is the venue's symbol for the order (e.g. BTCUSDT for a
	// signal's BTCUSDT.P); empty when rejected before sending.
	Symbol string
	// Quantity is the quantity the venue holds for the order: what was sent
	// after rounding to the venue's step, not what the signal asked. Zero
	// when rejected before sending.
	Quantity decimal.Decimal
	// FilledQuantity is what the venue executed of the order so far
	// (Binance executedQty, Bybit cumExecQty): zero when nothing filled (a
	// resting limit, a rejection), equal to Quantity for a full fill, and
	// in between for a partial fill — a market order that met too little
	// liquidity (filled, for what moved the position) or a limit order
	// partly filled while open. The position changed by this much, not by
	// Quantity.
	FilledQuantity decimal.Decimal
	// Price is the limit price as sent (rounded to the tick); invalid for a
	// market order.
	Price decimal.NullDecimal
	// Side is the side actually executed, resolved from the position for
	// close.
	Side string
	// Status is filled, open or rejected. A market order that expired after
	// a partial fill is filled (FilledQuantity says how much), never
	// rejected: something executed.
	Status Status
	// FillPrice is set when the order filled.
	FillPrice decimal.NullDecimal
	// Reason says why the venue refused the order, when it did.
	Reason string
	// AvgPrice is the average price of what executed so far (Binance
	// avgPrice or cummulativeQuoteQty/executedQty, Bybit avgPrice, OKX
	// avgPx); invalid while nothing executed.
	AvgPrice decimal.NullDecimal
	// Fee is what the venue charged for the executions so far, as a
	// positive amount in FeeAsset (zero while nothing executed, or when
	// the venue does not say): Binance fills[].commission or the
	// order's trades, Bybit cumFeeDetail, OKX's fee with its sign flipped.
	// A rebate is negative.
	Fee decimal.Decimal
	// FeeAsset is the asset Fee is charged in (Binance commissionAsset,
	// Bybit's settle or received coin, OKX feeCcy); "" when Fee is zero.
	// On spot it is the received asset (the base coin of a buy) unless the
	// venue takes it otherwise (BNB); a fee in the base coin reduces what
	// the strategy's spot ledger counts.
	FeeAsset string
	// CancelledFirst lists resting orders the adapter cancelled for this
	// order: Binance USDⓈ-M reduce-only orders that blocked a close
	// (-2022), cancelled before it, and hoox's exits (algo orders) of the
	// side a close of the whole position closed, cancelled once it filled
	// (they protected a position that is gone), and OKX swap trailing
	// stops likewise. Empty otherwise.
	CancelledFirst []CancelledOrder `json:",omitempty"`
	// ClosedPosition says, of a close that filled, that the venue's
	// adapter judged the position it closed gone — the position flat
	// after it, or all of a close of the whole position executed — and
	// cancelled the exits of that position it found resting
	// (CancelledFirst); see ExitsAfterCloseCanceler (Binance USDⓈ-M, OKX
	// swap). False otherwise, and on a venue whose exits end with the
	// position. PositionClosed (Bybit) is not the same judgement: it is
	// set only on a flat read, never for a whole close with an entry
	// beside it, and a Bybit setting sent after the close began would be
	// taken for ended with it (PositionClosedSince) if the two were one.
	ClosedPosition bool `json:",omitempty"`
	// EntryBeside, with ClosedPosition, says the adapter read a position
	// open after the close: an entry filled beside it. For a close sized
	// before its intent (Partial) the gateway's catch then takes only the
	// exits planned before the close's claim began (db.MarkClosedExitLegs).
	EntryBeside bool `json:",omitempty"`
	// PositionClosed is set on a filled close of the whole position when
	// the adapter read the position flat after it, on a venue that drops
	// the settings it holds on a position with it (Bybit's trailing stop:
	// "The system will cancel these orders if the position is closed",
	// docs/v5/position/trading-stop.mdx). Such a setting made before the
	// close ended with it, even when a later entry's leg sets the same
	// value on the next position.
	PositionClosed bool `json:",omitempty"`
	// TakeProfit and StopLoss are the trigger prices the venue holds on
	// the order itself (Bybit's takeProfit and stopLoss), as it reports
	// them; invalid when it holds none or does not say.
	TakeProfit, StopLoss decimal.NullDecimal
	// CallbackRate is the rate in percent a trailing stop placed as its
	// own order trails by, as the venue holds it (Binance USDⓈ-M
	// TRAILING_STOP_MARKET's callbackRate); invalid otherwise.
	CallbackRate decimal.NullDecimal
	// TrailingDistance is the price distance a trailing stop trails by, as
	// the venue holds it (Bybit linear: the position's trailingStop);
	// invalid otherwise.
	TrailingDistance decimal.NullDecimal
	// ExecutedExit says, for an exit placed as one order list (RoleOCO:
	// Binance spot OCO), which of its orders executed — RoleTakeProfit or
	// RoleStopLoss; the venue expired the other. Empty otherwise.
	ExecutedExit string `json:",omitempty"`
	// FillOrderID is the venue's ID of the order that executed for this
	// one when it is not ExchangeOrderID: the market order a triggered
	// Binance USDⓈ-M algo order became (actualOrderId), the executed order
	// of an OCO list. A FeeReader reads that order's trades.
	FillOrderID string `json:",omitempty"`
}

// CancelledOrder is a resting order cancelled to let a close through.
type CancelledOrder struct {
	ClientOrderID   string `json:"client_order_id"`
	ExchangeOrderID string `json:"exchange_order_id"`
	Side            string `json:"side"`
	// Remaining is what the order still had to execute.
	Remaining string `json:"remaining"`
	// PlacedByHoox says whether its client order ID has hoox's prefix.
	PlacedByHoox bool `json:"placed_by_hoox"`
}

// Venue is one exchange account. Implementations must be safe for concurrent
// use: many signals are dispatched at once.
type Venue interface {
	// Place sends one order. A refusal for good (bad symbol, no balance, no
	// position to close) is a Report with Status rejected and a nil error;
	// an error means the order's fate is not known to be final (see
	// ErrUnreachable and ErrUnknownOutcome).
	Place(ctx context.Context, o Order) (Report, error)
	// Lookup finds the order the venue holds under o.ClientOrderID (for
	// o.Symbol: venues index orders per symbol and category); ErrNotFound
	// when it holds none. When the held order does not match o — another
	// symbol, side or quantity than o would have been sent with — Lookup
	// returns an error wrapping ErrMismatch: the client order ID was reused
	// by a different signal, and adopting that order would be a lie.
	Lookup(ctx context.Context, o Order) (Report, error)
	// AcceptWindow is how long after a Place request was sent the venue may
	// still accept it and show it to Lookup: the request's own expiry
	// (Binance recvWindow, Bybit recv_window) plus the venue's lookup lag
	// and clock margin. Until it has passed, ErrNotFound after a lost answer
	// proves nothing; after it, nothing more can appear. Zero for a venue
	// whose write is visible the moment it commits (paper).
	AcceptWindow() time.Duration
}

// Canceler is implemented by a venue that can cancel an order hoox placed,
// by its client order ID (the `cancel` action). Cancel is idempotent: an
// order already final (cancelled, filled, expired) is reported as it is,
// not as an error, so a retry after a crash between two cancels finishes
// the work. ErrNotFound when the venue holds no order under the ID.
type Canceler interface {
	Cancel(ctx context.Context, o Order) (Report, error)
}

// ExitsAfterCloseCanceler is implemented by a venue whose exits rest as
// orders of their own that do not end with the position (Binance USDⓈ-M
// algo orders, OKX swap trailing stops), and whose close cancels the exits it finds resting once
// it filled (Report.ClosedPosition). An exit whose send was still on its
// way then is not among them: once every such send has ended, the
// gateway asks again with CancelExitsAfterClose, for the close o the
// venue reported r, naming the exits (client order IDs) of the closed
// position it has recorded open since — planned before the close's
// intent, so they protected what the close closed, whatever is open now.
// It cancels those still resting and returns them; it never fails: what
// it could not do is logged.
type ExitsAfterCloseCanceler interface {
	CancelExitsAfterClose(ctx context.Context, o Order, r Report, exits []string) []CancelledOrder
}

// FeeReader is implemented by a venue whose order query does not carry
// the fees charged (Binance: its account trade lists do). The follow job
// calls it for an order that executed something since it last looked, and
// it returns r with Fee and FeeAsset (and AvgPrice, when the trades say
// it) filled in.
type FeeReader interface {
	Fees(ctx context.Context, o Order, r Report) (Report, error)
}

// SharedDatabase is implemented by a venue that writes its orders into
// hoox's own Postgres (paper). The gateway may then commit an attempt's
// intent asynchronously: the venue's write comes later in the same WAL, so
// whenever the order is durable, so is the intent before it, and if the
// order is lost with a crash there is nothing to recover.
type SharedDatabase interface {
	SharesHooxDatabase() bool
}

// LateRefuser is implemented by a venue on which a request that went
// missing can never become an order later: Binance USDⓈ-M's matching engine
// refuses an order it reaches after timestamp + recvWindow (-5028), OKX
// one past its expTime, and paper commits or not at all. For such a venue a
// "not found" after AcceptWindow proves the order will never exist: the
// same client order ID may be sent again, and a key whose order was never
// placed may be freed. A venue that does not implement it, or answers
// false, is never re-sent an order that went missing: the trace ends
// failed as a missed trade and the operator is notified, rather than risk
// a second fill. Binance spot answers false (its docs say the recvWindow
// checks do not cover delays inside the matching engine), and so does
// Bybit (its create is asynchronous and may be booked late); Bybit keeps
// every orderLinkId for ever instead (IDKeeper), which makes a re-send
// under the same ID safe, but not a freed key's next execution, which
// gets a new ID.
type LateRefuser interface {
	RefusesLateRequests() bool
}

// RefusesLate reports whether v proves an order's absence once its accept
// window has closed (see LateRefuser).
func RefusesLate(v Venue) bool {
	lr, ok := v.(LateRefuser)
	return ok && lr.RefusesLateRequests()
}

// OrderLateRefuser is implemented by a venue whose answer differs by the
// kind of order it sends; its per-order answer is final. OKX refuses a
// late place-order request (expTime), but its algo endpoint takes no
// expTime, so a trailing stop that went missing may still be booked later.
type OrderLateRefuser interface {
	RefusesLateRequest(o Order) bool
}

// RefusesLateOrder reports whether v proves o's absence once its accept
// window has closed (or, for a setting, that sending it again is
// harmless): OrderLateRefuser's answer for o where v has one, else
// RefusesLate.
func RefusesLateOrder(v Venue, o Order) bool {
	if olr, ok := v.(OrderLateRefuser); ok {
		return olr.RefusesLateRequest(o)
	}
	return RefusesLate(v)
}

// IDKeeper is implemented by a venue that refuses, for ever, a client
// order ID it has seen once (Bybit's orderLinkId): an order sent again
// under the same ID is one order whatever arrives late — the late original
// is refused as a duplicate, or the re-send is and the original adopted.
// A "not found" there proves nothing (the key is never freed for a new
// ID), but sending again under the same ID is safe.
type IDKeeper interface {
	KeepsClientOrderIDs() bool
}

// ResendsSameID reports whether o, not found at v past its accept window,
// may be sent again under its own client order ID: v proves it absent
// (RefusesLateOrder), or v never takes one ID twice (IDKeeper).
func ResendsSameID(v Venue, o Order) bool {
	if k, ok := v.(IDKeeper); ok && k.KeepsClientOrderIDs() {
		return true
	}
	return RefusesLateOrder(v, o)
}

// Matches checks a held order against the order hoox would send: the same
// symbol, the same side (unless o leaves the side to the venue, as a close
// does) and the same quantity (unless o closes a position, whose size the
// venue decides). sentQuantity is o.Quantity as the adapter would send it
// (rounded to the venue's step); pass o.Quantity when the adapter does not
// round. The error wraps ErrMismatch and names the field.
func Matches(o Order, venueSymbol string, sentQuantity decimal.Decimal, held Report) error {
	switch {
	case held.Symbol != "" && !strings.EqualFold(held.Symbol, venueSymbol):
		return fmt.Errorf("%w: client order id %s is held for symbol %s, not %s", ErrMismatch, o.ClientOrderID, held.Symbol, venueSymbol)
	case o.Side != "" && held.Side != "" && !strings.EqualFold(held.Side, o.Side):
		return fmt.Errorf("%w: client order id %s is held as a %s, not a %s", ErrMismatch, o.ClientOrderID, held.Side, o.Side)
	case !IsClose(o.Action) && !held.Quantity.IsZero() && !held.Quantity.Equal(sentQuantity):
		return fmt.Errorf("%w: client order id %s is held for quantity %s, not %s", ErrMismatch, o.ClientOrderID, held.Quantity, sentQuantity)
	}
	return nil
}

// IsClose reports whether action closes a position (close, close_long,
// close_short): its side and size come from the venue's position.
func IsClose(action string) bool {
	return action == "close" || action == "close_long" || action == "close_short"
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
	// ErrMismatch means the venue holds an order under the client order ID
	// that is not the order being placed (another symbol, side or
	// quantity): the key was reused for a different signal. Never adopt it.
	ErrMismatch = errors.New("exchange holds a different order under this client order id")
	// ErrCredentials means the venue refused the request's credentials
	// (bad signature, key without trade permission, IP not whitelisted).
	// Adapters wrap it together with ErrUnreachable: nothing was placed, and
	// the operator has to fix the key before a retry can succeed.
	ErrCredentials = errors.New("exchange refused the api credentials")
)

// ReadFees completes r with its fees when v reads them apart from the
// order (FeeReader) and r executed something the caller has not seen with
// a fee yet: more than filledBefore, or anything when hadFee is false. It
// costs a request only then.
func ReadFees(ctx context.Context, v Venue, o Order, r Report, filledBefore decimal.Decimal, hadFee bool) (Report, error) {
	fr, ok := v.(FeeReader)
	if !ok || !r.FilledQuantity.IsPositive() || (r.FilledQuantity.Equal(filledBefore) && hadFee) {
		return r, nil
	}
	return fr.Fees(ctx, o, r)
}
