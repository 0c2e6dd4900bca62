package binancefake

import (
	"net/http"
	"net/url"

	"github.com/shopspring/decimal"
)

// Callback rate bounds of a TRAILING_STOP_MARKET order, in percent
// (trade/rest-api/New-Algo-Order.md: "callbackRate … min 0.1, max 10
// where 1 for 1%"). The doc gives no step; the fake takes multiples of the
// minimum (one decimal), the precision Binance's own order form offers.
var (
	minCallbackRate  = decimal.RequireFromString("0.1")
	maxCallbackRate  = decimal.NewFromInt(10)
	callbackRateStep = minCallbackRate
)

// newTrailingAlgo places a TRAILING_STOP_MARKET algo order (New-Algo-Order.md):
// a quantity on LOT_SIZE, a callbackRate within [0.1, 10] (-1130
// otherwise: error-code.md's "Data sent for parameter '%s' is not
// valid."), no triggerPrice, and an optional activatePrice (default the
// latest price) that must lie below the latest price for a BUY and above
// it for a SELL, else -2021 "Order would immediately trigger." (the doc's
// note on TRAILING_STOP_MARKET). Called with s.mu held.
func (s *Server) newTrailingAlgo(w http.ResponseWriter, p url.Values, sym Symbol) {
	side := p.Get("side")
	qty, err := decimal.NewFromString(p.Get("quantity"))
	switch {
	case err != nil || !qty.IsPositive():
		writeErr(w, http.StatusBadRequest, -4003, "Quantity less than or equal to zero.")
		return
	case sym.StepSize.IsPositive() && !qty.Mod(sym.StepSize).IsZero():
		writeErr(w, http.StatusBadRequest, -4023, "Quantity not increased by step size.")
		return
	case p.Get("triggerPrice") != "":
		writeErr(w, http.StatusBadRequest, -1106, "Parameter 'triggerPrice' sent when not required.")
		return
	}
	rate, err := decimal.NewFromString(p.Get("callbackRate"))
	if err != nil || rate.LessThan(minCallbackRate) || rate.GreaterThan(maxCallbackRate) || !rate.Mod(callbackRateStep).IsZero() {
		writeErr(w, http.StatusBadRequest, -1130, "Data sent for parameter 'callbackRate' is not valid.")
		return
	}
	activate := sym.Price
	if a := p.Get("activatePrice"); a != "" {
		activate, err = decimal.NewFromString(a)
		if err != nil || !activate.IsPositive() || (sym.TickSize.IsPositive() && !activate.Mod(sym.TickSize).IsZero()) {
			writeErr(w, http.StatusBadRequest, -4135, "Invalid activation price")
			return
		}
		if (side == "BUY" && !activate.LessThan(sym.Price)) || (side == "SELL" && !activate.GreaterThan(sym.Price)) {
			writeErr(w, http.StatusBadRequest, -2021, "Order would immediately trigger.")
			return
		}
	}
	s.bookAlgo(w, p, sym, &AlgoOrder{Side: side, Type: "TRAILING_STOP_MARKET", Quantity: qty, CallbackRate: rate, ActivatePrice: activate})
}
