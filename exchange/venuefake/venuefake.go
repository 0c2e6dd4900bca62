// Package venuefake is the one face every in-repo venue fake shows a test:
// where it listens, which credentials it accepts, the orders it booked,
// the price it fills at, and the faults a real venue produces. A test
// written against Fake runs the same scenario on every venue (see
// exchange/venues' scenario table and cmd/hoox's venue tests).
//
// Each fake package (binancefake, bybitfake, okxfake, …) keeps its own,
// richer API for its adapter's tests; Fake maps onto it, one market or
// category at a time, and imitates nothing itself.
package venuefake

import (
	"time"

	"github.com/shopspring/decimal"
)

// Order is one order a fake booked, in the words the tests need.
type Order struct {
	ClientOrderID   string
	ExchangeOrderID string
	Symbol          string
	// Side is "buy" or "sell".
	Side     string
	Quantity decimal.Decimal
	// TakeProfit and StopLoss are the exits set on the order itself
	// (zero: none, or a venue whose fake does not take them).
	TakeProfit, StopLoss decimal.Decimal
}

// Fault is a failure of the next order placement, named by what the client
// sees; each fake answers it as its venue does.
type Fault int

// The faults every fake can inject into its next placement.
const (
	// ServerErrorAfterAccept books the order, then answers a 5xx: the
	// order exists, the client cannot know.
	ServerErrorAfterAccept Fault = iota + 1
	// HangAfterAccept books the order and answers nothing until the client
	// gives up.
	HangAfterAccept
	// DropAfterAccept books the order and closes the connection unanswered.
	DropAfterAccept
	// RefuseInsufficientBalance refuses the order for good, before booking
	// it, with the venue's own "insufficient balance" code and message.
	RefuseInsufficientBalance
)

func (f Fault) String() string {
	switch f {
	case ServerErrorAfterAccept:
		return "server error after accept"
	case HangAfterAccept:
		return "hang after accept"
	case DropAfterAccept:
		return "drop after accept"
	case RefuseInsufficientBalance:
		return "refuse: insufficient balance"
	}
	return "unknown fault"
}

// Fake is one market (or category) of a running venue fake.
type Fake interface {
	// URL is the base URL to give the adapter.
	URL() string
	// APIKey, APISecret and Passphrase are the credentials the fake
	// accepts; Passphrase is "" for a venue without one.
	APIKey() string
	APISecret() string
	Passphrase() string
	// Orders are the orders booked in this market, oldest first.
	Orders() []Order
	// SetPrice sets symbol's last price, which market orders fill at.
	SetPrice(symbol string, price decimal.Decimal)
	// SetBalance sets the account's free balance of asset in this market
	// (on a derivatives market, the margin wallet for its settle asset).
	SetBalance(asset string, amount decimal.Decimal)
	// Inject makes the next placement fail as f.
	Inject(f Fault)
	// LagNextLookup hides the next placement from order queries for d.
	LagNextLookup(d time.Duration)
	// RefuseCredentials makes the fake refuse hoox's key as a venue does a
	// wrong, rotated or unpermitted one; accept undoes it.
	RefuseCredentials() (accept func())
	// SetLeverage changes symbol's leverage at the venue behind hoox's
	// back (a manual change, another replica). A no-op on spot.
	SetLeverage(symbol string, leverage int)
	// LeverageSets counts the leverage changes hoox requested on symbol;
	// 0 on spot.
	LeverageSets(symbol string) int
	// RefuseLeverage makes the venue refuse every leverage change with its
	// own code (Binance -2027, Bybit 110013, OKX 59107); accept undoes it.
	RefuseLeverage() (accept func())
	// SetHedgeMode puts the derivatives account in hedge (two-sided)
	// position mode, or back in one-way mode; the fake then refuses
	// orders as the venue refuses one-way orders in hedge mode. A no-op
	// on spot.
	SetHedgeMode(on bool)
	// FillPart executes qty (in the base asset, as signals count) more of
	// the resting order under clientOrderID at its limit price, as if the
	// market traded through it: the order stays open until all of it has
	// filled. An error when no such order rests.
	FillPart(clientOrderID string, qty decimal.Decimal) error
	// CancelAtVenue cancels the resting order under clientOrderID on the
	// venue's side, not through hoox (the account's owner in the venue's
	// app, or the venue itself), keeping what filled before: the venue's
	// own cancelled status (Binance CANCELED with executedQty, Bybit
	// Cancelled or on spot PartiallyFilledCanceled, OKX canceled with
	// accFillSz). An error when no such order rests.
	CancelAtVenue(clientOrderID string) error
	// SetSpotFeeRate makes every spot fill from now on pay rate (0.001
	// for 0.1 %; zero for none) in the asset it received, taken out of the
	// balance and reported as the venue reports a fee. Until it is called
	// a fake reports its default rate without moving the balances.
	SetSpotFeeRate(rate decimal.Decimal)
	// Close stops the fake (every market it serves).
	Close()
}

// Faults is one fake's own answer to each shared Fault, so that every
// fake maps them the same way (For) and keeps only its venue's codes.
type Faults[F any] struct {
	ServerErrorAfterAccept, HangAfterAccept, DropAfterAccept F
	// RefuseInsufficientBalance carries the venue's own code and message
	// (per market where they differ).
	RefuseInsufficientBalance F
}

// For is the fake's fault for f; an f outside the Fault constants is a
// bug in the test and panics.
func (m Faults[F]) For(f Fault) F {
	switch f {
	case ServerErrorAfterAccept:
		return m.ServerErrorAfterAccept
	case HangAfterAccept:
		return m.HangAfterAccept
	case DropAfterAccept:
		return m.DropAfterAccept
	case RefuseInsufficientBalance:
		return m.RefuseInsufficientBalance
	}
	panic("venuefake: unknown fault " + f.String())
}

// Rotate makes a fake accept a key other than key and secret (the
// "rotated-" ones), as a venue refuses a deleted or rotated key, through
// the fake's own set; the returned func accepts key and secret again.
// It is RefuseCredentials for every fake.
func Rotate(key, secret string, set func(key, secret string)) (accept func()) {
	set("rotated-"+key, "rotated-"+secret)
	return func() { set(key, secret) }
}

// Toggle turns a fake's refusal on through set and returns the func that
// turns it off: RefuseLeverage for every fake.
func Toggle(set func(on bool)) (off func()) {
	set(true)
	return func() { set(false) }
}
