package binance

import (
	"encoding/json"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// A USDⓈ-M trailing stop is a TRAILING_STOP_MARKET algo order
// (trade/rest-api/New-Algo-Order.md in the stored scrape of Binance's
// USDⓈ-M docs): it trails by callbackRate, a percent "min 0.1, max 10
// where 1 for 1%", from the highest (SELL) or lowest (BUY) price after it
// is placed; activatePrice defaults to the latest price, which hoox keeps
// (the exit starts trailing at once, as the other venues' trailing stops
// do). hoox sends the rate with one decimal (multiples of the minimum).
var (
	minCallbackRate = decimal.RequireFromString("0.1")
	maxCallbackRate = decimal.NewFromInt(10)
)

// ReasonTrailingDistance refuses a trailing stop given as a price distance:
// Binance trails by a percent only, and a distance turned into a percent of
// the fill price could fall outside the venue's range after the entry has
// been placed, leaving the position without the exit asked for.
const ReasonTrailingDistance = `trailing_stop on binance-futures takes a percent only ({"percent": p}, Binance's callbackRate, 0.1 to 10): Binance trails by a rate, not a price distance`

// callbackRate is the callbackRate hoox sends for the trailing target a:
// its percent rounded down to one decimal (a tighter stop, never a looser
// one than asked, as every exit rounds). reason says why a cannot be sent
// (no percent, or a rate outside the venue's range).
func callbackRate(a *exchange.Attached) (rate decimal.Decimal, reason string) {
	if a == nil || !a.Percent.Valid {
		return rate, ReasonTrailingDistance
	}
	rate = a.Percent.Decimal.Div(minCallbackRate).Floor().Mul(minCallbackRate)
	if rate.LessThan(minCallbackRate) || a.Percent.Decimal.GreaterThan(maxCallbackRate) {
		return rate, fmt.Sprintf("trailing_stop percent %s is outside binance-futures' callbackRate range 0.1 to 10 (one decimal)", a.Percent.Decimal)
	}
	return rate, ""
}

// algoDecimal reads a decimal the Algo Order API may send as "" (its
// answer carries "callbackRate": "" on an order that is not a trailing
// stop, New-Algo-Order.md); "" reads as zero.
type algoDecimal struct{ decimal.Decimal }

func (d *algoDecimal) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil && s == "" {
		d.Decimal = decimal.Zero
		return nil
	}
	return d.Decimal.UnmarshalJSON(b)
}

// trailingRefusal is why a trailing stop a cannot be sent, checked before
// anything is claimed; "" when it can.
func trailingRefusal(a *exchange.Attached) string {
	_, reason := callbackRate(a)
	return reason
}
