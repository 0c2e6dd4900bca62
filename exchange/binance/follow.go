package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var (
	_ exchange.Canceler  = (*Venue)(nil)
	_ exchange.FeeReader = (*Venue)(nil)
)

// Cancel cancels the order held under o.ClientOrderID: DELETE
// /api/v3/order (spot, rest-api.md "Cancel order") or DELETE /fapi/v1/order
// (USDⓈ-M, trade/rest-api/Cancel-Order.md), by symbol and
// origClientOrderId. Binance answers -2011 "Unknown order sent." for an
// order that is not active — already cancelled, filled, expired, or never
// placed (errors.md, -2011 CANCEL_REJECTED) — so Cancel then looks the
// order up and reports it as it is: idempotent, as a retry after a crash
// between two cancels needs. exchange.ErrNotFound when Binance holds none.
//
// A USDⓈ-M exit (o.Exit set: a take-profit or stop-loss leg, placed
// through the Algo Order API under its clientAlgoId) is not on the plain
// order endpoint at all: it is cancelled by cancelAlgo. A spot exit list
// (OCO) is cancelled by cancelOCO; a lone spot exit is a plain order, and
// cancelSpotExit reads its answer as an exit's.
func (v *Venue) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit != "" && v.futures() {
		return v.cancelAlgo(ctx, o)
	}
	if o.Exit == exchange.RoleOCO && !v.futures() {
		return v.cancelOCO(ctx, o)
	}
	if o.Exit != "" {
		return v.cancelSpotExit(ctx, o)
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	p := params{}.add("symbol", symbol).add("origClientOrderId", o.ClientOrderID)
	var a orderAnswer
	err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/order", params: p, signed: true, weight: 1}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Code == -2011 {
		return v.Lookup(ctx, o)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: cancel order %s: %w", o.ClientOrderID, err)
	}
	return a.report(), nil
}

// Fees reads the order's executions from the account trade list — GET
// /api/v3/myTrades (spot, rest-api.md "Account trade list", weight 5 with
// orderId) or GET /fapi/v1/userTrades (USDⓈ-M,
// trade/rest-api/Account-Trade-List.md) — and returns r with their
// commission summed (in one asset, as fees chooses: a trade charged in
// another asset, BNB beside USDT, is left out and logged) and the average
// price of the executions.
func (v *Venue) Fees(ctx context.Context, o exchange.Order, r exchange.Report) (exchange.Report, error) {
	if r.ExchangeOrderID == "" || !r.FilledQuantity.IsPositive() {
		return r, nil
	}
	path := v.prefix + "/myTrades"
	if v.futures() {
		path = v.prefix + "/userTrades"
	}
	// An exit's executions are its triggered order's (an algo order's
	// actualOrderId, an OCO list's executed order), not the exit's own ID.
	orderID := r.ExchangeOrderID
	if r.FillOrderID != "" {
		orderID = r.FillOrderID
	}
	p := params{}.add("symbol", exchange.VenueSymbol(o.Symbol)).add("orderId", orderID)
	var trades []fill
	if err := v.do(ctx, request{method: http.MethodGet, path: path, params: p, signed: true, weight: 5}, &trades); err != nil {
		return r, fmt.Errorf("binance: trades of order %s: %w", o.ClientOrderID, err)
	}
	fee, asset, mixed := fees(trades)
	if mixed {
		v.log.WarnContext(ctx, "binance charged an order's fees in two assets; only one is recorded",
			"client_order_id", o.ClientOrderID, "recorded_asset", asset)
	}
	var quote, qty decimal.Decimal
	for _, t := range trades {
		quote, qty = quote.Add(t.Price.Mul(t.Qty)), qty.Add(t.Qty)
	}
	if asset != "" {
		r.Fee, r.FeeAsset = fee, asset
	}
	if qty.IsPositive() {
		r.AvgPrice = decimal.NewNullDecimal(quote.Div(qty))
	}
	return r, nil
}
