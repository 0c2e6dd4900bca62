package binancefake

import (
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange/venuefake"
)

// Venue is one market of s (MarketSpot or MarketFutures) behind the shared
// test-facing interface every venue fake implements, so that one scenario
// runs on every venue.
func (s *Server) Venue(market string) venuefake.Fake { return &venueView{s: s, market: market} }

type venueView struct {
	s      *Server
	market string
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
		if o.Market == v.market {
			out = append(out, venuefake.Order{ClientOrderID: o.ClientOrderID, ExchangeOrderID: strconv.FormatInt(o.OrderID, 10),
				Symbol: o.Symbol, Side: strings.ToLower(o.Side), Quantity: o.Quantity})
		}
	}
	return out
}

// SetPrice sets the symbol's price on both markets: the fake keeps one
// price per symbol.
func (v *venueView) SetPrice(symbol string, price decimal.Decimal) { v.s.SetPrice(symbol, price) }

// SetBalance sets a spot free balance, or on futures the USDT margin
// wallet (the only asset futures keeps).
func (v *venueView) SetBalance(asset string, amount decimal.Decimal) {
	if v.market == MarketFutures {
		if asset == "USDT" {
			v.s.SetFuturesWallet(amount)
		}
		return
	}
	v.s.SetBalance(asset, amount)
}

func (v *venueView) Inject(f venuefake.Fault) {
	refuse := Fault{Kind: FaultRefuse, Code: -2010, Msg: "Account has insufficient balance for requested action."}
	if v.market == MarketFutures {
		refuse = Fault{Kind: FaultRefuse, Code: -2019, Msg: "Margin is insufficient."}
	}
	v.s.Inject(venuefake.Faults[Fault]{ServerErrorAfterAccept: Fault{Kind: FaultServerErrorAfterAccept},
		HangAfterAccept: Fault{Kind: FaultHangAfterAccept}, DropAfterAccept: Fault{Kind: FaultDropAfterAccept},
		RefuseInsufficientBalance: refuse}.For(f))
}

func (v *venueView) LagNextLookup(d time.Duration) { v.s.LagNextLookup(d) }

// RefuseCredentials rotates the key the fake accepts: hoox's requests are
// refused with -2015, as Binance refuses a deleted key.
func (v *venueView) RefuseCredentials() func() {
	return venuefake.Rotate(v.s.APIKey(), v.s.APISecret(), v.s.SetCredentials)
}

// SetLeverage changes a futures symbol's leverage behind hoox's back; spot
// has none.
func (v *venueView) SetLeverage(symbol string, leverage int) {
	if v.market == MarketFutures {
		v.s.SetLeverage(symbol, leverage)
	}
}

// LeverageSets counts hoox's leverage requests for symbol (futures).
func (v *venueView) LeverageSets(symbol string) int {
	if v.market != MarketFutures {
		return 0
	}
	return v.s.LeverageCalls(symbol)
}

// RefuseLeverage refuses every leverage change with -2027.
func (v *venueView) RefuseLeverage() func() {
	return venuefake.Toggle(v.s.RefuseLeverage)
}

// SetHedgeMode sets the futures account's position mode.
func (v *venueView) SetHedgeMode(on bool) { v.s.SetHedgeMode(on) }

// FillPart fills qty more of the resting order (PARTIALLY_FILLED, then
// FILLED).
func (v *venueView) FillPart(clientOrderID string, qty decimal.Decimal) error {
	return v.s.PartialFill(clientOrderID, qty)
}

// CancelAtVenue cancels the resting order on Binance's side (CANCELED,
// executedQty kept).
func (v *venueView) CancelAtVenue(clientOrderID string) error {
	return v.s.CancelOrder(clientOrderID)
}

// SetSpotFeeRate charges rate on every spot fill from now on (see the
// Server's method).
func (v *venueView) SetSpotFeeRate(rate decimal.Decimal) { v.s.SetSpotCommission(rate) }
