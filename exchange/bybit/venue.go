package bybit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// Reasons for refusals the adapter decides itself, before sending; a
// venue's refusal carries Bybit's retMsg instead.
const (
	ReasonUnknownSymbol     = "unknown symbol"
	ReasonNotTrading        = "symbol is not trading"
	ReasonNoPosition        = "no position to close"
	ReasonSpotCloseShort    = "close_short is not supported on spot: there is no short position to buy back"
	ReasonSpotShort         = "short is not supported on spot: spot cannot open a short position (send sell to sell the base coin held)"
	ReasonLimitWithoutPrice = "limit order without price"
	ReasonBadOrderType      = "unsupported order type"
	ReasonBelowMinQty       = "quantity below the symbol's minimum"
	ReasonBelowMinNotional  = "order value below the symbol's minimum notional"
	ReasonClientOrderID     = "client order id not allowed by bybit (1-36 of A-Z a-z 0-9 _ -)"
)

// orderLinkIDPattern is Bybit's documented rule for orderLinkId: at most 36
// letters, digits, dashes and underscores. hoox needs the ID to find the
// order again, so an empty one is refused too.
var orderLinkIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,36}$`)

// createBody is POST /v5/order/create's body. Field order is the signed
// JSON's order; empty optional fields are left out.
type createBody struct {
	Category    string `json:"category"`
	Symbol      string `json:"symbol"`
	Side        string `json:"side"`
	OrderType   string `json:"orderType"`
	Qty         string `json:"qty"`
	Price       string `json:"price,omitempty"`
	TimeInForce string `json:"timeInForce,omitempty"`
	OrderLinkID string `json:"orderLinkId"`
	// MarketUnit baseCoin makes a spot market buy's qty the base coin, as
	// for every other order (Bybit's default is the quote coin).
	MarketUnit  string `json:"marketUnit,omitempty"`
	PositionIdx *int   `json:"positionIdx,omitempty"`
	ReduceOnly  *bool  `json:"reduceOnly,omitempty"`
}

// Place sends o as one Bybit order under orderLinkId o.ClientOrderID and
// reports it. An accepted order whose state cannot be learnt (see confirm)
// is ErrUnknownOutcome, never an open order nobody re-checks.
//
// The order is stamped (X-BAPI-TIMESTAMP) with Bybit's time at Place's
// start, before the reads it needs first (server time, instruments-info,
// ticker, position or balance, set-leverage), so that it expires no later
// than recv_window after the gateway's intent: a reconcile that waits out
// AcceptWindow from there knows the order can no longer be accepted. If
// those reads outlast recv_window, Bybit refuses the order unexecuted
// (10002, ErrUnreachable) and Place does not send it again.
func (v *Venue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	start := v.cfg.Now()
	sym := exchange.VenueSymbol(o.Symbol)
	// Refused here, before anything is sent: Bybit would answer a param
	// error, and an order hoox cannot look up by its ID must not exist.
	if !orderLinkIDPattern.MatchString(o.ClientOrderID) {
		return rejected(ReasonClientOrderID), nil
	}
	if o.OrderType != "market" && o.OrderType != "limit" {
		return rejected(ReasonBadOrderType + ": " + o.OrderType), nil
	}
	if v.cfg.Category == Spot && o.Action == "short" {
		// A short on spot would be a plain sell of the base coin held:
		// the strategy meant to open a short, and selling what the
		// account holds instead is a trade nobody asked for.
		return rejected(ReasonSpotShort), nil
	}
	if err := v.ensureTime(ctx); err != nil {
		return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, err)
	}
	stamp := v.serverTimeAt(start)
	f, found, err := v.filtersFor(ctx, sym)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, asUnreachable(err))
	}
	if !found {
		return rejected(ReasonUnknownSymbol + ": " + sym), nil
	}
	if f.status != "" && f.status != "Trading" {
		return rejected(ReasonNotTrading + ": " + f.status), nil
	}

	side, qty, orderType := o.Side, o.Quantity, o.OrderType
	reduceOnly := o.ReduceOnly && v.cfg.Category == Linear
	if exchange.IsClose(o.Action) {
		var reason string
		side, qty, reason, err = v.closeOrder(ctx, o, f)
		if err != nil {
			return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, err)
		}
		if reason != "" {
			return rejected(reason), nil
		}
		orderType, reduceOnly = "market", v.cfg.Category == Linear
	}
	if side != "buy" && side != "sell" {
		return rejected(fmt.Sprintf("invalid side %q", side)), nil
	}

	qty = roundDown(qty, f.step)
	var price decimal.NullDecimal
	if orderType == "limit" {
		if !o.Price.Valid {
			return rejected(ReasonLimitWithoutPrice), nil
		}
		price = decimal.NewNullDecimal(roundPrice(o.Price.Decimal, f.tick, side))
	}
	if !qty.IsPositive() || qty.LessThan(f.minQty) {
		return rejected(fmt.Sprintf("%s: %s rounds down to %s (step %s, minimum %s)",
			ReasonBelowMinQty, o.Quantity, qty, f.step, f.minQty)), nil
	}
	// A reduce-only order (a close) is not checked against the minimum
	// notional here: Bybit's docs do not say whether it applies to one
	// (Binance futures exempts them), so Bybit decides. Refusing it here
	// could leave a small position that hoox can never close.
	if f.minNotional.IsPositive() && !reduceOnly {
		ref := price
		if !ref.Valid && o.Price.Valid && !exchange.IsClose(o.Action) {
			ref = o.Price
		}
		if !ref.Valid {
			last, err := v.lastPrice(ctx, sym)
			if err != nil {
				return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, asUnreachable(err))
			}
			ref = decimal.NewNullDecimal(last)
		}
		if n := qty.Mul(ref.Decimal); n.LessThan(f.minNotional) {
			return rejected(fmt.Sprintf("%s: %s × %s = %s < %s", ReasonBelowMinNotional, qty, ref.Decimal, n, f.minNotional)), nil
		}
	}
	if v.cfg.Category == Linear && o.Leverage > 0 {
		reason, err := v.ensureLeverage(ctx, sym, o.Leverage)
		if err != nil {
			return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, err)
		}
		if reason != "" {
			return rejected(reason), nil
		}
	}

	body := createBody{
		Category: string(v.cfg.Category), Symbol: sym, Side: bybitSide(side),
		OrderType: bybitOrderType(orderType), Qty: qty.String(), OrderLinkID: o.ClientOrderID,
	}
	if price.Valid {
		body.Price, body.TimeInForce = price.Decimal.String(), "GTC"
	}
	if v.cfg.Category == Linear {
		zero := 0 // one-way mode
		body.PositionIdx, body.ReduceOnly = &zero, &reduceOnly
	} else if orderType == "market" {
		body.MarketUnit = "baseCoin"
	}
	var ack struct {
		OrderID     string `json:"orderId"`
		OrderLinkID string `json:"orderLinkId"`
	}
	err = v.call(ctx, request{method: http.MethodPost, path: "/v5/order/create", body: body, private: true, stamp: stamp}, &ack)
	if err != nil {
		var e *apiError
		if errors.As(err, &e) && (e.class == ClassRejected || e.class == ClassFilter) {
			if e.class == ClassFilter {
				v.invalidateFilters(sym)
			}
			v.log.InfoContext(ctx, "bybit rejected the order", slog.String("client_order_id", o.ClientOrderID),
				slog.String("symbol", sym), slog.Int("ret_code", e.retCode), slog.String("ret_msg", e.retMsg))
			r := rejected(e.retMsg)
			r.Symbol, r.Side, r.Quantity, r.Price = sym, side, qty, price
			if r.Reason == "" {
				r.Reason = fmt.Sprintf("bybit http %d", e.status)
			}
			return r, nil
		}
		return exchange.Report{}, fmt.Errorf("bybit place %s: %w", o.ClientOrderID, err)
	}

	// The answer only acknowledges; the order's state needs a query.
	return v.confirm(ctx, sym, o.ClientOrderID, ack.OrderID, orderType == "market")
}

// confirm learns the state of an order Bybit acknowledged. Bybit processes
// a create asynchronously, and a filled or cancelled order may be found
// only in history, so it asks realtime, then history, again with a
// growing pause until ConfirmWait (or the caller's deadline) would be
// passed. A limit order is reported as soon as it is seen, open or not; a
// market order only in a final state. When that cannot be learnt, the
// answer wraps ErrUnknownOutcome — never ErrUnreachable: the order exists —
// and the gateway's reconcile records it later (orderLinkId stays unique, so
// a re-place is refused as a duplicate and the order adopted).
func (v *Venue) confirm(ctx context.Context, sym, linkID, orderID string, market bool) (exchange.Report, error) {
	pause, waited := 25*time.Millisecond, time.Duration(0)
	var last error
	for {
		r, err := v.find(ctx, sym, linkID, false)
		switch {
		case err == nil && (!market || r.Status != exchange.StatusOpen):
			return r, nil
		case err == nil:
			last = fmt.Errorf("bybit shows it %s, not yet final", r.Status)
		default:
			last = err
		}
		if waited+pause > v.cfg.ConfirmWait {
			break
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < pause {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			last = ctx.Err()
		case <-t.C:
		}
		if ctx.Err() != nil {
			break
		}
		waited += pause
		pause = min(2*pause, 400*time.Millisecond)
	}
	v.log.WarnContext(ctx, "bybit accepted the order but its state could not be learnt; the gateway reconciles it",
		slog.String("client_order_id", linkID), slog.String("order_id", orderID), slog.Any("error", last))
	// %v, not %w: whatever the query's error wraps (ErrNotFound,
	// ErrUnreachable), the order was accepted.
	return exchange.Report{}, fmt.Errorf("bybit place %s: accepted as order %s, but its state is not known (%v): %w",
		linkID, orderID, last, exchange.ErrUnknownOutcome)
}

// Lookup finds the order Bybit holds under o.ClientOrderID for o's symbol in
// this venue's category: in /v5/order/realtime (open orders and the latest
// closed ones), then /v5/order/history (older, and everything after a Bybit
// restart). ErrNotFound when neither has it; ErrMismatch when the order
// held is not the one o would have been sent as.
func (v *Venue) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	sym := exchange.VenueSymbol(o.Symbol)
	r, err := v.find(ctx, sym, o.ClientOrderID, true)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, err)
	}
	sent := o.Quantity
	if !exchange.IsClose(o.Action) {
		f, found, err := v.filtersFor(ctx, sym)
		if err != nil {
			return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, err)
		}
		if found {
			sent = roundDown(o.Quantity, f.step)
		}
	}
	if err := exchange.Matches(o, sym, sent, r); err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup: %w", err)
	}
	return r, nil
}

// orderInfo is one order as realtime and history list it.
type orderInfo struct {
	OrderID      string `json:"orderId"`
	OrderLinkID  string `json:"orderLinkId"`
	Symbol       string `json:"symbol"`
	Side         string `json:"side"`
	OrderType    string `json:"orderType"`
	OrderStatus  string `json:"orderStatus"`
	Price        string `json:"price"`
	Qty          string `json:"qty"`
	AvgPrice     string `json:"avgPrice"`
	CumExecQty   string `json:"cumExecQty"`
	CumExecValue string `json:"cumExecValue"`
	RejectReason string `json:"rejectReason"`
}

// find queries realtime, then history for its default last 7 days, for
// linkID; older (a Lookup, not Place's confirm) then walks history back 7
// days per query over HistoryLookback, since a history query without a
// time range covers only the last 7 days (order-list.mdx, startTime).
func (v *Venue) find(ctx context.Context, sym, linkID string, older bool) (exchange.Report, error) {
	base := url.Values{"category": {string(v.cfg.Category)}, "symbol": {sym}, "orderLinkId": {linkID}}
	queries := []struct {
		path  string
		query url.Values
	}{{"/v5/order/realtime", base}, {"/v5/order/history", base}}
	if older {
		now := v.serverNow()
		for back := historySpan; back < v.cfg.HistoryLookback; back += historySpan {
			q := url.Values{}
			for k, vs := range base {
				q[k] = vs
			}
			end := now.Add(-back)
			q.Set("startTime", strconv.FormatInt(end.Add(-historySpan).UnixMilli(), 10))
			q.Set("endTime", strconv.FormatInt(end.UnixMilli(), 10))
			queries = append(queries, struct {
				path  string
				query url.Values
			}{"/v5/order/history", q})
		}
	}
	for _, qu := range queries {
		var res struct {
			List []orderInfo `json:"list"`
		}
		if err := v.call(ctx, request{method: http.MethodGet, path: qu.path, query: qu.query, private: true}, &res); err != nil {
			return exchange.Report{}, err
		}
		for _, oi := range res.List {
			if oi.OrderLinkID == linkID {
				return toReport(oi), nil
			}
		}
	}
	return exchange.Report{}, exchange.ErrNotFound
}

// toReport maps Bybit's order to a Report. New, PartiallyFilled,
// Untriggered and Triggered are open; Filled is filled; a closed order
// (Cancelled, PartiallyFilledCanceled, Rejected, Deactivated) is filled
// when anything executed — a market order is an IOC that Bybit cancels
// after a partial fill — else rejected. A status Bybit may add later counts
// as open: not final, so the gateway keeps asking.
func toReport(oi orderInfo) exchange.Report {
	executed := dec(oi.CumExecQty)
	r := exchange.Report{
		ExchangeOrderID: oi.OrderID, Symbol: oi.Symbol, Side: strings.ToLower(oi.Side),
		Quantity: dec(oi.Qty), FilledQuantity: executed, Status: exchange.StatusOpen,
	}
	if oi.OrderType == "Limit" {
		r.Price = decimal.NewNullDecimal(dec(oi.Price))
	}
	fill := dec(oi.AvgPrice)
	if !fill.IsPositive() && executed.IsPositive() {
		fill = dec(oi.CumExecValue).DivRound(executed, 16)
	}
	switch oi.OrderStatus {
	case "Filled":
		r.Status, r.FillPrice = exchange.StatusFilled, decimal.NewNullDecimal(fill)
	case "Cancelled", "PartiallyFilledCanceled", "Rejected", "Deactivated":
		if executed.IsPositive() {
			r.Status, r.FillPrice = exchange.StatusFilled, decimal.NewNullDecimal(fill)
			break
		}
		r.Status = exchange.StatusRejected
		r.Reason = "order " + strings.ToLower(oi.OrderStatus)
		if oi.RejectReason != "" && oi.RejectReason != "EC_NoError" {
			r.Reason += ": " + oi.RejectReason
		}
	}
	return r
}

// closeOrder resolves a close action to a side and size from the venue:
// linear reads the one-way position, spot the free base-coin balance. A
// non-empty reason refuses the close for good.
func (v *Venue) closeOrder(ctx context.Context, o exchange.Order, f filters) (side string, qty decimal.Decimal, reason string, err error) {
	if v.cfg.Category == Spot {
		if o.Action == "close_short" {
			return "", decimal.Zero, ReasonSpotCloseShort, nil
		}
		free, err := v.freeBalance(ctx, f.baseCoin)
		if err != nil {
			return "", decimal.Zero, "", err
		}
		if !free.IsPositive() {
			return "", decimal.Zero, ReasonNoPosition, nil
		}
		return "sell", free, "", nil
	}
	var res struct {
		List []struct {
			Symbol      string `json:"symbol"`
			Side        string `json:"side"`
			Size        string `json:"size"`
			PositionIdx int    `json:"positionIdx"`
		} `json:"list"`
	}
	q := url.Values{"category": {string(Linear)}, "symbol": {f.symbol}}
	if err := v.call(ctx, request{method: http.MethodGet, path: "/v5/position/list", query: q, private: true}, &res); err != nil {
		return "", decimal.Zero, "", fmt.Errorf("read position %s: %w", f.symbol, asUnreachable(err))
	}
	for _, p := range res.List {
		size := dec(p.Size)
		if p.Symbol != f.symbol || p.PositionIdx != 0 || !size.IsPositive() {
			continue
		}
		switch {
		case p.Side == "Buy" && o.Action != "close_short":
			return "sell", size, "", nil
		case p.Side == "Sell" && o.Action != "close_long":
			return "buy", size, "", nil
		}
	}
	return "", decimal.Zero, ReasonNoPosition, nil
}

// freeBalance is what the unified account can sell of coin: the wallet
// balance less what open orders lock and what was borrowed.
func (v *Venue) freeBalance(ctx context.Context, coin string) (decimal.Decimal, error) {
	var res struct {
		List []struct {
			Coin []struct {
				Coin          string `json:"coin"`
				WalletBalance string `json:"walletBalance"`
				Locked        string `json:"locked"`
				SpotBorrow    string `json:"spotBorrow"`
			} `json:"coin"`
		} `json:"list"`
	}
	q := url.Values{"accountType": {"UNIFIED"}, "coin": {coin}}
	if err := v.call(ctx, request{method: http.MethodGet, path: "/v5/account/wallet-balance", query: q, private: true}, &res); err != nil {
		return decimal.Zero, fmt.Errorf("read balance %s: %w", coin, asUnreachable(err))
	}
	free := decimal.Zero
	for _, acct := range res.List {
		for _, c := range acct.Coin {
			if c.Coin == coin {
				free = free.Add(dec(c.WalletBalance).Sub(dec(c.Locked)).Sub(dec(c.SpotBorrow)))
			}
		}
	}
	return free, nil
}

// ensureLeverage sets symbol's leverage unless the cache says it already
// is: Bybit applies leverage per symbol, so it must be right before the
// order. 110043 ("leverage not modified") means it already was. A refusal
// returns its reason; any other failure means nothing was placed.
func (v *Venue) ensureLeverage(ctx context.Context, sym string, lev int) (reason string, err error) {
	v.mu.Lock()
	cur, ok := v.leverage[sym]
	v.mu.Unlock()
	if ok && cur == lev {
		return "", nil
	}
	l := strconv.Itoa(lev)
	body := map[string]string{"category": string(Linear), "symbol": sym, "buyLeverage": l, "sellLeverage": l}
	err = v.call(ctx, request{method: http.MethodPost, path: "/v5/position/set-leverage", body: body, private: true}, nil)
	var e *apiError
	switch {
	case err == nil, errors.As(err, &e) && e.retCode == 110043:
	case e != nil && (e.class == ClassRejected || e.class == ClassFilter):
		return "set leverage " + l + ": " + e.retMsg, nil
	default:
		return "", fmt.Errorf("set leverage %s %s: %w", sym, l, asUnreachable(err))
	}
	v.mu.Lock()
	v.leverage[sym] = lev
	v.mu.Unlock()
	return "", nil
}

// rejected is a refusal for good decided before sending: nothing reached
// the venue, so the report names no symbol or quantity.
func rejected(reason string) exchange.Report {
	return exchange.Report{Status: exchange.StatusRejected, Reason: reason}
}

// isRefusal reports whether err is Bybit refusing the request for good.
func isRefusal(err error) bool {
	var e *apiError
	return errors.As(err, &e) && (e.class == ClassRejected || e.class == ClassFilter)
}

func bybitSide(side string) string {
	if side == "sell" {
		return "Sell"
	}
	return "Buy"
}

func bybitOrderType(t string) string {
	if t == "limit" {
		return "Limit"
	}
	return "Market"
}
