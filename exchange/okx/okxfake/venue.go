package okxfake

import (
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/venuefake"
)

// Venue is one instrument type of s (InstSpot or InstSwap) behind the
// shared test-facing interface every venue fake implements.
func (s *Server) Venue(instType string) venuefake.Fake { return &venueView{s: s, instType: instType} }

type venueView struct {
	s        *Server
	instType string
}

var _ venuefake.Fake = (*venueView)(nil)

func (v *venueView) URL() string        { return v.s.URL }
func (v *venueView) APIKey() string     { return v.s.APIKey() }
func (v *venueView) APISecret() string  { return v.s.APISecret() }
func (v *venueView) Passphrase() string { return v.s.Passphrase() }
func (v *venueView) Close()             { v.s.Close() }

// Orders reports quantities in the base currency (contracts × ctVal on a
// swap), the unit signals use.
func (v *venueView) Orders() []venuefake.Order {
	v.s.mu.Lock()
	ins := v.s.instruments
	v.s.mu.Unlock()
	var out []venuefake.Order
	for _, o := range v.s.Orders() {
		if o.InstType != v.instType {
			continue
		}
		qty := o.Sz
		if in, ok := ins[o.InstID]; ok && in.CtVal.IsPositive() {
			qty = qty.Mul(in.CtVal)
		}
		out = append(out, venuefake.Order{ClientOrderID: o.ClOrdID, ExchangeOrderID: o.OrdID, Symbol: o.InstID, Side: o.Side, Quantity: qty,
			TakeProfit: o.TpTriggerPx, StopLoss: o.SlTriggerPx})
	}
	return out
}

func (v *venueView) SetPrice(symbol string, price decimal.Decimal) { v.s.SetPrice(symbol, price) }

// SetBalance sets the trading account's balance of asset, which spot and
// swaps (cross margin in USDT) share.
func (v *venueView) SetBalance(asset string, amount decimal.Decimal) { v.s.SetBalance(asset, amount) }

func (v *venueView) Inject(f venuefake.Fault) {
	v.s.Inject(venuefake.Faults[Fault]{ServerErrorAfterAccept: Fault{Kind: FaultServerErrorAfterAccept},
		HangAfterAccept: Fault{Kind: FaultHangAfterAccept}, DropAfterAccept: Fault{Kind: FaultDropAfterAccept},
		RefuseInsufficientBalance: Fault{Kind: FaultRefuse, Code: 51008, Msg: "Order failed. Insufficient USDT balance in account"}}.For(f))
}

func (v *venueView) LagNextLookup(d time.Duration) { v.s.LagNextLookup(d) }

// RefuseCredentials rotates the key the fake accepts (50111 "Invalid
// OK-ACCESS-KEY"), as after the key was deleted at OKX.
func (v *venueView) RefuseCredentials() func() {
	pass := v.s.Passphrase()
	return venuefake.Rotate(v.s.APIKey(), v.s.APISecret(), func(key, secret string) { v.s.SetCredentials(key, secret, pass) })
}

// instID maps a signal's symbol (BTCUSDT) to the swap's instId.
func (v *venueView) swapID(symbol string) string {
	v.s.mu.Lock()
	defer v.s.mu.Unlock()
	for id, in := range v.s.instruments {
		if in.InstType == InstSwap && compact(id) == symbol {
			return id
		}
	}
	return ""
}

// SetLeverage changes a swap's leverage behind hoox's back; spot has none.
func (v *venueView) SetLeverage(symbol string, leverage int) {
	if v.instType == InstSwap {
		v.s.SetLeverage(v.swapID(symbol), leverage)
	}
}

// LeverageSets counts hoox's set-leverage requests for symbol's swap.
func (v *venueView) LeverageSets(symbol string) int {
	if v.instType != InstSwap {
		return 0
	}
	return v.s.LeverageSets(v.swapID(symbol))
}

// RefuseLeverage refuses every set-leverage with 59107.
func (v *venueView) RefuseLeverage() func() {
	return venuefake.Toggle(v.s.RefuseLeverage)
}

// SetHedgeMode sets the account's posMode (long_short_mode when on).
func (v *venueView) SetHedgeMode(on bool) { v.s.SetLongShortMode(on) }

// FillPart fills qty more of the pending order, in contracts on a swap
// (qty / ctVal).
func (v *venueView) FillPart(clientOrderID string, qty decimal.Decimal) error {
	v.s.mu.Lock()
	o := v.s.latest(clientOrderID)
	var ctVal decimal.Decimal
	if o != nil {
		ctVal = v.s.instruments[o.InstID].CtVal
	}
	v.s.mu.Unlock()
	if ctVal.IsPositive() {
		qty = qty.Div(ctVal)
	}
	return v.s.PartialFill(clientOrderID, qty)
}

// CancelAtVenue cancels the pending order on OKX's side (canceled,
// accFillSz kept).
func (v *venueView) CancelAtVenue(clientOrderID string) error { return v.s.CancelOrder(clientOrderID) }

// SetSpotFeeRate charges rate on every spot fill from now on (see the
// Server's method).
func (v *venueView) SetSpotFeeRate(rate decimal.Decimal) { v.s.SetSpotFeeRate(rate) }
