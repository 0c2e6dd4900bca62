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

// spotAlgoTypes are the spot order types MAX_NUM_ALGO_ORDERS counts
// (filters.md: "STOP_LOSS, STOP_LOSS_LIMIT, TAKE_PROFIT, and
// TAKE_PROFIT_LIMIT"), alone or as an order of an order list.
var spotAlgoTypes = map[string]bool{"STOP_LOSS": true, "STOP_LOSS_LIMIT": true, "TAKE_PROFIT": true, "TAKE_PROFIT_LIMIT": true}

// ExitCaps reads the symbol's MAX_NUM_ALGO_ORDERS (exchangeInfo, cached
// with the other filters) and, when it publishes one, counts the algo
// orders open on the symbol with the cheapest documented read:
//
//   - USDⓈ-M: GET /fapi/v1/openAlgoOrders?symbol= (weight 1,
//     trade/rest-api/Current-All-Algo-Open-Orders.md); every algo order
//     counts (common-definition.md, "MAX_NUM_ALGO_ORDERS": STOP,
//     STOP_MARKET, TAKE_PROFIT, TAKE_PROFIT_MARKET, TRAILING_STOP_MARKET),
//     hoox's or not. Each exit is one algo order.
//   - Spot: GET /api/v3/openOrders?symbol= (weight 6, rest-api.md
//     "Current open orders", which lists the orders of open lists too),
//     counting the types filters.md names. The entry's exits add one: its
//     stop order (an OCO list's STOP_LOSS; the list's LIMIT_MAKER does not
//     count).
//
// Binance refuses the exit beyond the cap only when it is placed, after
// the entry filled (-4045 "Reach max stop order limit." on USDⓈ-M,
// error-code.md; -1013 "Filter failure: MAX_NUM_ALGO_ORDERS" on spot,
// errors.md): reading first lets the gateway refuse such an entry before
// anything is sent.
func (v *Venue) ExitCaps(ctx context.Context, o exchange.Order) ([]exchange.ExitCap, error) {
	if !o.HasAttachments() || (!v.futures() && o.StopLoss == nil && o.TrailingStop == nil) {
		// A spot take-profit alone rests as a LIMIT_MAKER, which the
		// filter does not count.
		return nil, nil
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	f, _, err := v.filtersFor(ctx, symbol)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassRejected {
		// A symbol Binance does not list: the placement refuses it for
		// good, with Binance's words; no cap to read.
		return nil, nil
	}
	if err != nil || f.MaxNumAlgoOrders <= 0 {
		return nil, err
	}
	c := exchange.ExitCap{Filter: filterMaxAlgoOrders, Symbol: symbol, Limit: f.MaxNumAlgoOrders, Adds: 1}
	if v.futures() {
		c.Adds = len(o.Attachments())
		var open []struct {
			AlgoID int64 `json:"algoId"`
		}
		req := request{method: http.MethodGet, path: v.prefix + "/openAlgoOrders", params: params{}.add("symbol", symbol), signed: true, weight: 1}
		if err := v.do(ctx, req, &open); err != nil {
			return nil, fmt.Errorf("binance: open algo orders on %s: %w", symbol, err)
		}
		c.Open = len(open)
		return []exchange.ExitCap{c}, nil
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
			c.Open++
		}
	}
	return []exchange.ExitCap{c}, nil
}
