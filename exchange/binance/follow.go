package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

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
// trade/rest-api/Account-Trade-List.md, weight 5) — every one of them
// (see spotTrades and futuresTrades: one page holds 500 by default, and
// USDⓈ-M reads 7 days at a time), and returns r with their commission
// summed (in one asset, as fees chooses: a trade charged in another
// asset, BNB beside USDT, is left out and logged) and the average price of
// the executions.
func (v *Venue) Fees(ctx context.Context, o exchange.Order, r exchange.Report) (exchange.Report, error) {
	if r.ExchangeOrderID == "" || !r.FilledQuantity.IsPositive() {
		return r, nil
	}
	// An exit's executions are its triggered order's (an algo order's
	// actualOrderId, an OCO list's executed order), not the exit's own ID.
	orderID := r.ExchangeOrderID
	if r.FillOrderID != "" {
		orderID = r.FillOrderID
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	var trades []fill
	var err error
	if v.futures() {
		trades, err = v.futuresTrades(ctx, symbol, orderID, r.FilledQuantity)
	} else {
		trades, err = v.spotTrades(ctx, symbol, orderID)
	}
	if err != nil {
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
	if qty.LessThan(r.FilledQuantity) {
		v.log.WarnContext(ctx, "binance lists fewer executions of an order than it says filled; the fee recorded is theirs",
			"client_order_id", o.ClientOrderID, "filled", r.FilledQuantity.String(), "traded", qty.String())
	}
	if asset != "" {
		r.Fee, r.FeeAsset = fee, asset
	}
	if qty.IsPositive() {
		r.AvgPrice = decimal.NewNullDecimal(quote.Div(qty))
	}
	return r, nil
}

// The account trade lists' documented limits (rest-api.md "Account trade
// list", Account-Trade-List.md): a page holds 500 trades unless limit asks
// for up to 1000; USDⓈ-M reads at most 7 days a query (the last 7 when
// neither startTime nor endTime is sent, and fromId may not go with
// either) and keeps 6 months. maxTradeRequests bounds what one Fees may
// cost (weight 5 each): past it the order's fee is not guessed from part
// of its trades.
const (
	tradesPageLimit    = 1000
	futuresTradeWindow = 7 * 24 * time.Hour
	futuresTradeKept   = 180 * 24 * time.Hour
	maxTradeRequests   = 100
)

// spotTrades reads every trade of spot order orderID: pages of 1000 from
// the first trade on (symbol + orderId + fromId, a combination rest-api.md
// lists), each from the trade after the last one read, until a page comes
// back short.
func (v *Venue) spotTrades(ctx context.Context, symbol, orderID string) ([]fill, error) {
	t := v.tradeReader(symbol, orderID)
	if err := t.fromFirst(ctx); err != nil {
		return nil, err
	}
	return t.out, nil
}

// futuresTrades reads the trades of USDⓈ-M order orderID until they add up
// to filled. First the last 7 days, the span Binance reads when neither
// startTime nor endTime is sent: pages of 1000 from the first trade on
// (symbol + orderId + fromId), as spotTrades does; most orders executed
// within them, even a market order's thousand fills in one millisecond.
// Then, for an order that rested longer, 7-day windows (symbol + orderId +
// startTime + endTime) further back, as far as the 6 months Binance keeps;
// a window that comes back full is read again in halves, since fromId may
// not go with a time span. Trades are counted once by ID: the windows
// overlap the first read by a minute, against the error of the clock
// estimate.
func (v *Venue) futuresTrades(ctx context.Context, symbol, orderID string, filled decimal.Decimal) ([]fill, error) {
	now, err := v.serverNow(ctx)
	if err != nil {
		return nil, err
	}
	t := v.tradeReader(symbol, orderID)
	if err := t.fromFirst(ctx); err != nil {
		return nil, err
	}
	end := now.Add(-futuresTradeWindow + time.Minute)
	oldest := now.Add(-futuresTradeKept)
	for end.After(oldest) && t.qty.LessThan(filled) {
		start := end.Add(-futuresTradeWindow)
		if start.Before(oldest) {
			start = oldest
		}
		if err := t.span(ctx, start.UnixMilli(), end.UnixMilli()); err != nil {
			return nil, err
		}
		end = start.Add(-time.Millisecond)
	}
	return t.out, nil
}

// tradeReader collects an order's trades from the account trade list,
// within a budget of requests.
type tradeReader struct {
	v               *Venue
	path            string
	symbol, orderID string
	seen            map[int64]bool
	out             []fill
	qty             decimal.Decimal
	budget          int
}

// tradeReader reads symbol's order orderID on this venue's trade list.
func (v *Venue) tradeReader(symbol, orderID string) *tradeReader {
	path := v.prefix + "/myTrades"
	if v.futures() {
		path = v.prefix + "/userTrades"
	}
	return &tradeReader{v: v, path: path, symbol: symbol, orderID: orderID, seen: map[int64]bool{}, budget: maxTradeRequests}
}

// get reads one page of the order's trades with the further parameters
// p, within the request budget.
func (t *tradeReader) get(ctx context.Context, p params) ([]fill, error) {
	if t.budget == 0 {
		return nil, fmt.Errorf("more than %d trade list requests, not all read", maxTradeRequests)
	}
	t.budget--
	p = append(params{}.add("symbol", t.symbol).add("orderId", t.orderID), p...).add("limit", strconv.Itoa(tradesPageLimit))
	var page []fill
	err := t.v.do(ctx, request{method: http.MethodGet, path: t.path, params: p, signed: true, weight: 5}, &page)
	return page, err
}

// keep counts the trades of page not seen yet.
func (t *tradeReader) keep(page []fill) {
	for _, f := range page {
		if !t.seen[f.ID] {
			t.seen[f.ID] = true
			t.out, t.qty = append(t.out, f), t.qty.Add(f.Qty)
		}
	}
}

// fromFirst reads the order's trades page after page from the first,
// until a page comes back short: all of them on spot, those of the last 7
// days on USDⓈ-M.
func (t *tradeReader) fromFirst(ctx context.Context) error {
	from := int64(0)
	for {
		page, err := t.get(ctx, params{}.add("fromId", strconv.FormatInt(from, 10)))
		if err != nil {
			return err
		}
		t.keep(page)
		if len(page) < tradesPageLimit {
			return nil
		}
		from = page[len(page)-1].ID + 1
	}
}

// span reads the order's trades in [start, end] (milliseconds, both
// included), halving the span while a page comes back full.
func (t *tradeReader) span(ctx context.Context, start, end int64) error {
	page, err := t.get(ctx, params{}.add("startTime", strconv.FormatInt(start, 10)).add("endTime", strconv.FormatInt(end, 10)))
	if err != nil {
		return err
	}
	if len(page) < tradesPageLimit {
		t.keep(page)
		return nil
	}
	if start == end {
		return fmt.Errorf("%d trades or more in one millisecond more than 7 days ago, not all read", tradesPageLimit)
	}
	mid := start + (end-start)/2
	if err := t.span(ctx, start, mid); err != nil {
		return err
	}
	return t.span(ctx, mid+1, end)
}
