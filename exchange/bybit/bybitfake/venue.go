package bybitfake

import (
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/venuefake"
)

// Venue is one category of s (CategoryLinear or CategorySpot) behind the
// shared test-facing interface every venue fake implements, so that one
// scenario runs on every venue.
func (s *Server) Venue(category string) venuefake.Fake { return &venueView{s: s, category: category} }

type venueView struct {
	s        *Server
	category string
}

var _ venuefake.Fake = (*venueView)(nil)

func (v *venueView) URL() string        { return v.s.URL }
func (v *venueView) APIKey() string     { return v.s.APIKey() }
func (v *venueView) APISecret() string  { return v.s.APISecret() }
func (v *venueView) Passphrase() string { return "" }
func (v *venueView) Close()             { v.s.Close() }

func (v *venueView) Orders() []venuefake.Order {
	var out []venuefake.Order
	for _, o := range v.s.Orders() {
		if o.Category == v.category {
			out = append(out, venuefake.Order{ClientOrderID: o.OrderLinkID, ExchangeOrderID: o.OrderID,
				Symbol: o.Symbol, Side: strings.ToLower(o.Side), Quantity: o.Qty, TakeProfit: o.TakeProfit, StopLoss: o.StopLoss})
		}
	}
	return out
}

func (v *venueView) SetPrice(symbol string, price decimal.Decimal) {
	v.s.SetPrice(v.category, symbol, price)
}

// SetBalance sets a coin's wallet balance in the unified account, which
// both categories share.
func (v *venueView) SetBalance(asset string, amount decimal.Decimal) { v.s.SetBalance(asset, amount) }

func (v *venueView) Inject(f venuefake.Fault) {
	refuse := Refuse(110007, "ab not enough for new order")
	if v.category == CategorySpot {
		refuse = Refuse(170131, "Insufficient balance.")
	}
	v.s.InjectPlacements(1, venuefake.Faults[Fault]{ServerErrorAfterAccept: ServerErrorAfterAccept(),
		HangAfterAccept: HangAfterAccept(), DropAfterAccept: DropAfterAccept(), RefuseInsufficientBalance: refuse}.For(f))
}

func (v *venueView) LagNextLookup(d time.Duration) { v.s.LagNextLookup(d) }

// RefuseCredentials rotates the key the fake accepts (10003 "API key is
// invalid"), as after the key was deleted or rotated at Bybit.
func (v *venueView) RefuseCredentials() func() {
	return venuefake.Rotate(v.s.APIKey(), v.s.APISecret(), v.s.SetCredentials)
}

// SetLeverage changes a linear symbol's leverage behind hoox's back; spot
// has none.
func (v *venueView) SetLeverage(symbol string, leverage int) {
	if v.category == CategoryLinear {
		v.s.SetLeverage(symbol, leverage)
	}
}

// LeverageSets counts hoox's set-leverage requests for symbol (linear).
func (v *venueView) LeverageSets(symbol string) int {
	if v.category != CategoryLinear {
		return 0
	}
	_, n := v.s.Leverage(symbol)
	return n
}

// RefuseLeverage refuses every set-leverage with 110013.
func (v *venueView) RefuseLeverage() func() {
	return venuefake.Toggle(v.s.RefuseLeverage)
}

// SetHedgeMode sets the linear account's position mode.
func (v *venueView) SetHedgeMode(on bool) { v.s.SetHedgeMode(on) }

// FillPart fills qty more of the open limit order (PartiallyFilled, then
// Filled).
func (v *venueView) FillPart(clientOrderID string, qty decimal.Decimal) error {
	if !v.s.PartialFill(v.category, clientOrderID, qty) {
		return fmt.Errorf("bybitfake: fill %s: no such open order", clientOrderID)
	}
	return nil
}

// CancelAtVenue cancels the resting order on Bybit's side, keeping what
// filled (Cancelled; PartiallyFilledCanceled on spot after a fill).
func (v *venueView) CancelAtVenue(clientOrderID string) error {
	if !v.s.CancelOrder(v.category, clientOrderID) {
		return fmt.Errorf("bybitfake: cancel %s: no such open order", clientOrderID)
	}
	return nil
}

// SetSpotFeeRate charges rate on every spot fill from now on (see the
// Server's method).
func (v *venueView) SetSpotFeeRate(rate decimal.Decimal) { v.s.SetSpotFeeRate(rate) }
