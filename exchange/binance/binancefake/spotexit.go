package binancefake

import (
	"net/url"
	"slices"
	"strconv"

	"github.com/shopspring/decimal"
)

// DefaultSpotOrderTypes is the orderTypes list exchangeInfo serves for a
// spot symbol whose Symbol.OrderTypes is nil: every type Binance lists
// (enums.md, "Order types"), as BTCUSDT and ETHUSDT have them.
var DefaultSpotOrderTypes = []string{"LIMIT", "LIMIT_MAKER", "MARKET", "STOP_LOSS", "STOP_LOSS_LIMIT", "TAKE_PROFIT", "TAKE_PROFIT_LIMIT"}

// Default TRAILING_DELTA filter bounds, in BIPS (filters.md's example:
// 10 to 2000, 0.1 % to 20 %), for a symbol that leaves them zero.
const (
	DefaultMinTrailingDelta = 10
	DefaultMaxTrailingDelta = 2000
)

// spotTypeRefusals are Binance's -2010 messages for an order type the
// symbol does not list in orderTypes (errors.md, "Messages for -1010,
// -2010 …"); LIMIT_MAKER has none of its own there, and "Unsupported order
// combination" stands in for it.
var spotTypeRefusals = map[string]string{
	"MARKET":            "Market orders are not supported for this symbol.",
	"STOP_LOSS":         "Stop loss orders are not supported for this symbol.",
	"STOP_LOSS_LIMIT":   "Stop loss limit orders are not supported for this symbol.",
	"TAKE_PROFIT":       "Take profit orders are not supported for this symbol.",
	"TAKE_PROFIT_LIMIT": "Take profit limit orders are not supported for this symbol.",
	"LIMIT_MAKER":       "Unsupported order combination",
}

// spotContingent are the spot order types that wait for a trigger and
// then execute as a MARKET order (rest-api.md, "New order": STOP_LOSS and
// TAKE_PROFIT "will execute a MARKET order when the conditions are met").
// The *_LIMIT variants are not implemented by the fake: it answers -1116
// for them.
var spotContingent = map[string]bool{"STOP_LOSS": true, "TAKE_PROFIT": true}

func (sym Symbol) spotOrderTypes() []string {
	if sym.OrderTypes == nil {
		return DefaultSpotOrderTypes
	}
	return sym.OrderTypes
}

func (sym Symbol) trailingBounds() (lo, hi int64) {
	lo, hi = int64(sym.MinTrailingDelta), int64(sym.MaxTrailingDelta)
	if lo == 0 {
		lo = DefaultMinTrailingDelta
	}
	if hi == 0 {
		hi = DefaultMaxTrailingDelta
	}
	return lo, hi
}

// spotTerms are a spot order's prices as the request gave them.
type spotTerms struct {
	price, stopPrice decimal.Decimal
	trailingDelta    int64
}

// checkSpotType refuses a spot order whose type the symbol does not list
// (-2010 with the type's message) or that the fake does not implement
// (-1116); callers hold mu.
func checkSpotType(sym Symbol, typ string) *apiError {
	known := typ == "MARKET" || typ == "LIMIT" || typ == "LIMIT_MAKER" || spotContingent[typ]
	if !known && typ != "STOP_LOSS_LIMIT" && typ != "TAKE_PROFIT_LIMIT" {
		return &apiError{Code: -1116, Msg: "Invalid orderType."}
	}
	if !slices.Contains(sym.spotOrderTypes(), typ) {
		return &apiError{Code: -2010, Msg: spotTypeRefusals[typ]}
	}
	if !known {
		return &apiError{Code: -1116, Msg: "Invalid orderType."}
	}
	return nil
}

// spotExitTerms reads and checks the parameters of a spot LIMIT_MAKER,
// STOP_LOSS or TAKE_PROFIT order as rest-api.md ("New order") lists them:
// LIMIT_MAKER takes quantity and price; STOP_LOSS and TAKE_PROFIT take
// quantity and stopPrice or trailingDelta, and no price or timeInForce
// (-1106). stopPrice obeys PRICE_FILTER like a price (filters.md:
// "price/stopPrice"), trailingDelta the symbol's TRAILING_DELTA range
// ("Filter failure: TRAILING_DELTA") and allowTrailingStop. The trigger
// is checked against the last price as Binance does (rest-api.md,
// "Trigger order price rules against market price": above it for a
// STOP_LOSS BUY or TAKE_PROFIT SELL, below it for a STOP_LOSS SELL or
// TAKE_PROFIT BUY; a stop already met is -2010 "Order would trigger
// immediately.", errors.md), and a LIMIT_MAKER that would trade at once
// is -2010 "Order would immediately match and take.".
func spotExitTerms(sym Symbol, typ, side string, p url.Values) (spotTerms, *apiError) {
	var t spotTerms
	bad := func(code int, msg string) (spotTerms, *apiError) { return t, &apiError{Code: code, Msg: msg} }
	priceOK := func(d decimal.Decimal) bool {
		return d.IsPositive() && (!sym.TickSize.IsPositive() || d.Mod(sym.TickSize).IsZero()) &&
			(!sym.MinPrice.IsPositive() || !d.LessThan(sym.MinPrice)) && (!sym.MaxPrice.IsPositive() || !d.GreaterThan(sym.MaxPrice))
	}
	last := sym.Price
	if typ == "LIMIT_MAKER" {
		if p.Get("stopPrice") != "" || p.Get("trailingDelta") != "" {
			return bad(-1106, "Parameter 'stopPrice' sent when not required.")
		}
		price, err := decimal.NewFromString(p.Get("price"))
		if err != nil {
			return bad(-1102, "Mandatory parameter 'price' was not sent, was empty/null, or malformed.")
		}
		if !priceOK(price) {
			return bad(-1013, "Filter failure: PRICE_FILTER")
		}
		if (side == "SELL" && !price.GreaterThan(last)) || (side == "BUY" && !price.LessThan(last)) {
			return bad(-2010, "Order would immediately match and take.")
		}
		t.price = price
		return t, nil
	}
	if p.Get("price") != "" {
		return bad(-1106, "Parameter 'price' sent when not required.")
	}
	if p.Get("timeInForce") != "" {
		return bad(-1106, "Parameter 'timeInForce' sent when not required.")
	}
	if p.Get("stopPrice") == "" && p.Get("trailingDelta") == "" {
		return bad(-1102, "Param 'stopPrice' or 'trailingDelta' must be sent, but both were empty/null!")
	}
	if raw := p.Get("trailingDelta"); raw != "" {
		if !sym.AllowTrailingStop {
			return bad(-2010, "Trailing stop orders are not supported for this symbol.")
		}
		d, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return bad(-1100, "Illegal characters found in parameter 'trailingDelta'; legal range is '^[0-9]{1,20}$'.")
		}
		lo, hi := sym.trailingBounds()
		if d < lo || d > hi {
			return bad(-1013, "Filter failure: TRAILING_DELTA")
		}
		t.trailingDelta = d
	}
	if raw := p.Get("stopPrice"); raw != "" {
		stop, err := decimal.NewFromString(raw)
		if err != nil || !priceOK(stop) {
			return bad(-1013, "Filter failure: PRICE_FILTER")
		}
		// Above the market: STOP_LOSS BUY, TAKE_PROFIT SELL; below it:
		// STOP_LOSS SELL, TAKE_PROFIT BUY. On the trigger's side (or at
		// it) the order would fire at once.
		above := (typ == "STOP_LOSS") == (side == "BUY")
		if (above && !stop.GreaterThan(last)) || (!above && !stop.LessThan(last)) {
			return bad(-2010, "Order would trigger immediately.")
		}
		t.stopPrice = stop
	}
	return t, nil
}

// lockedSpot is the base quantity symbol's open SELL orders and lists
// hold: Binance moves what a resting sell may sell from free to locked,
// so another sell can only use the rest; callers hold mu.
func (s *Server) lockedSpot(symbol string) decimal.Decimal {
	locked := s.lockedByLists(symbol)
	for _, o := range s.orders {
		if o.Market == MarketSpot && o.Symbol == symbol && o.Side == "SELL" && o.Open() {
			locked = locked.Add(o.Quantity.Sub(o.ExecutedQty))
		}
	}
	return locked
}
