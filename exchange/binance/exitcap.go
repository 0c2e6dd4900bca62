package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.ExitCapper = (*Venue)(nil)

// filterMaxAlgoOrders is the symbol filter that caps the algo (stop and
// take-profit) orders an account may hold open on a symbol.
const filterMaxAlgoOrders = "MAX_NUM_ALGO_ORDERS"

// filterMaxOrders is the spot symbol filter that caps every open order
// of the account on a symbol (filters.md, "MAX_NUM_ORDERS").
const filterMaxOrders = "MAX_NUM_ORDERS"

// AccountAlgoOrderLimit is how many conditional (algo) orders a USDⓈ-M
// account may hold open across all symbols, since Binance stopped
// publishing MAX_NUM_ALGO_ORDERS per symbol: "The parameter "filterType":
// "MAX_NUM_ALGO_ORDERS" has been removed from the endpoint GET
// /fapi/v1/exchangeInfo. The condtional order limits is 200 across all
// symbols." (derivatives change-log.md, 2025-12-29). Past it an exit is
// refused -4045, after its entry filled.
const AccountAlgoOrderLimit = 200

// accountAlgoLimit names AccountAlgoOrderLimit in a refusal.
const accountAlgoLimit = "Binance USDⓈ-M's conditional order limit"

// countedAlgo is what MAX_NUM_ALGO_ORDERS counts, in the refusal's words.
const countedAlgo = "stop/take-profit orders"

// spotAlgoTypes are the spot order types MAX_NUM_ALGO_ORDERS counts
// (filters.md: "STOP_LOSS, STOP_LOSS_LIMIT, TAKE_PROFIT, and
// TAKE_PROFIT_LIMIT"), alone or as an order of an order list.
var spotAlgoTypes = map[string]bool{"STOP_LOSS": true, "STOP_LOSS_LIMIT": true, "TAKE_PROFIT": true, "TAKE_PROFIT_LIMIT": true}

// ExitCaps reads the symbol's MAX_NUM_ALGO_ORDERS (and on spot
// MAX_NUM_ORDERS) from exchangeInfo, cached with the other filters, and,
// when it publishes one, counts the orders open on the symbol with the
// cheapest documented read:
//
//   - USDⓈ-M: GET /fapi/v1/openAlgoOrders?symbol= (weight 1,
//     trade/rest-api/Current-All-Algo-Open-Orders.md); every algo order
//     counts (common-definition.md, "MAX_NUM_ALGO_ORDERS": STOP,
//     STOP_MARKET, TAKE_PROFIT, TAKE_PROFIT_MARKET, TRAILING_STOP_MARKET),
//     hoox's or not. Each exit is one algo order. Binance no longer
//     publishes the filter (change-log.md 2025-12-29): without it, every
//     symbol's open algo orders are counted against the account's limit,
//     AccountAlgoOrderLimit (weight 40 without a symbol).
//   - Spot: GET /api/v3/openOrders?symbol= (weight 6, rest-api.md
//     "Current open orders", which lists the orders of open lists too),
//     counting the types filters.md names for the algo cap and every
//     order for MAX_NUM_ORDERS (spotExitCaps).
//
// Binance refuses the exit beyond the cap only when it is placed, after
// the entry filled (-4045 "Reach max stop order limit." on USDⓈ-M,
// error-code.md; -1013 "Filter failure: MAX_NUM_ALGO_ORDERS" on spot,
// errors.md): reading first lets the gateway refuse such an entry before
// anything is sent.
func (v *Venue) ExitCaps(ctx context.Context, o exchange.Order) ([]exchange.ExitCap, error) {
	if !o.HasAttachments() {
		return nil, nil
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	f, _, err := v.filtersFor(ctx, symbol)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassRejected {
		// A symbol Binance does not list: the placement refuses it for
		// good, with Binance's words; no cap to read.
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v.futures() {
		return v.futuresExitCaps(ctx, o, symbol, f)
	}
	return v.spotExitCaps(ctx, o, symbol, f)
}

// futuresExitCaps counts the open algo orders against the cap: the
// symbol's MAX_NUM_ALGO_ORDERS where exchangeInfo still publishes one,
// else the account's limit across all symbols (AccountAlgoOrderLimit),
// counted with GET /fapi/v1/openAlgoOrders without a symbol (weight 40,
// Current-All-Algo-Open-Orders.md). Each exit is one algo order.
func (v *Venue) futuresExitCaps(ctx context.Context, o exchange.Order, symbol string, f Filters) ([]exchange.ExitCap, error) {
	c := exchange.ExitCap{Filter: filterMaxAlgoOrders, Counted: countedAlgo, Symbol: symbol, Limit: f.MaxNumAlgoOrders, Adds: len(o.Attachments()),
		EachExit: true}
	p, weight := params{}.add("symbol", symbol), 1
	if c.Limit <= 0 {
		c.Filter, c.Symbol, c.Limit, c.AllSymbols = accountAlgoLimit, "all symbols", AccountAlgoOrderLimit, true
		p, weight = params{}, 40
	}
	var open []struct {
		AlgoID int64 `json:"algoId"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/openAlgoOrders", params: p, signed: true, weight: weight}
	if err := v.do(ctx, req, &open); err != nil {
		return nil, fmt.Errorf("binance: open algo orders on %s: %w", c.Symbol, err)
	}
	c.Open = len(open)
	return []exchange.ExitCap{c}, nil
}

// spotExitCaps reads the symbol's open orders once and counts them
// against MAX_NUM_ALGO_ORDERS (the stop order among the exits: a
// STOP_LOSS alone or an OCO list's; a take-profit alone rests as a
// LIMIT_MAKER, which it does not count) and MAX_NUM_ORDERS (every open
// order, an order list's two included, filters.md: "both \"algo\" orders
// and normal orders are counted"; the exits are one order, or two as an
// OCO list).
func (v *Venue) spotExitCaps(ctx context.Context, o exchange.Order, symbol string, f Filters) ([]exchange.ExitCap, error) {
	algo := exchange.ExitCap{Filter: filterMaxAlgoOrders, Counted: countedAlgo, Symbol: symbol, Limit: f.MaxNumAlgoOrders}
	if o.StopLoss != nil || o.TrailingStop != nil {
		algo.Adds = 1
	}
	orders := exchange.ExitCap{Filter: filterMaxOrders, Counted: "orders", Symbol: symbol, Limit: f.MaxNumOrders, Adds: min(len(o.Attachments()), 2)}
	var caps []*exchange.ExitCap
	if algo.Limit > 0 && algo.Adds > 0 {
		caps = append(caps, &algo)
	}
	if orders.Limit > 0 {
		caps = append(caps, &orders)
	}
	if len(caps) == 0 {
		return nil, nil
	}
	var open []struct {
		Type string `json:"type"`
	}
	req := request{method: http.MethodGet, path: v.prefix + "/openOrders", params: params{}.add("symbol", symbol), signed: true, weight: 6}
	if err := v.do(ctx, req, &open); err != nil {
		return nil, fmt.Errorf("binance: open orders on %s: %w", symbol, err)
	}
	for _, ord := range open {
		if spotAlgoTypes[ord.Type] {
			algo.Open++
		}
	}
	orders.Open = len(open)
	out := make([]exchange.ExitCap, len(caps))
	for i, c := range caps {
		out[i] = *c
	}
	return out, nil
}
