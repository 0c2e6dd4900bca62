// Package bybit is hoox's adapter for Bybit's v5 REST API: one Venue serves
// category linear (USDT perpetuals, exchange name `bybit`) or category spot
// (`bybit-spot`), chosen by Config.Category.
//
// What it guarantees the gateway:
//   - Every private request is signed as Bybit documents (HMAC-SHA256, lower
//     hex, of timestamp + api_key + recv_window + payload; headers X-BAPI-*)
//     with a timestamp corrected by the offset to Bybit's server time, so a
//     drifting host clock does not get orders refused. An order carries the
//     time its Place started, not the time it is sent, so that it expires
//     within AcceptWindow of the gateway's intent.
//   - Orders carry the client order ID as orderLinkId, which Bybit keeps
//     unique for ever per category, and are found again by it in
//     /v5/order/realtime, then /v5/order/history.
//   - Every failure is classified by one table (ErrorTable) into the
//     exchange package's errors: nothing sent (ErrUnreachable, with
//     ErrCredentials for key problems), may exist (ErrUnknownOutcome),
//     duplicate (ErrDuplicateClientOrderID), or a rejected Report.
//   - Quantities are rounded down to the symbol's step and limit prices to
//     the tick on the passive side, and an order below the minimum quantity
//     or notional is rejected before anything is sent.
//
// Bybit's create-order answer is only an acknowledgement (orderId and
// orderLinkId; "this request is asynchronous"). Place therefore looks the
// order up right after, in realtime and then history (a filled or
// cancelled order may be only there), a few times within
// Config.ConfirmWait. A limit order is reported as soon as it is seen; a
// market order once its state is final. If that cannot be learnt, Place
// answers ErrUnknownOutcome, and the gateway's reconcile (Lookup) learns
// whether and at what price it filled.
//
// Linear positions are read in one-way mode (positionIdx 0); hedge mode is
// not supported. Spot ignores leverage.
package bybit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Venue is one Bybit account in one category. It is safe for concurrent use.
type Venue struct {
	cfg Config
	log *slog.Logger

	clock   venuekit.Clock
	filters venuekit.FilterCache[filters]
	// pauses hold, per path ("" for every path), the local time before
	// which requests fail fast because of a rate limit.
	pauses venuekit.Pauses
}

var _ exchange.Venue = (*Venue)(nil)

// New returns a Venue for cfg (defaults applied), or an error naming what is
// missing or invalid.
func New(cfg Config) (*Venue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("bybit config: %w", err)
	}
	v := &Venue{
		cfg:   cfg,
		log:   cfg.Logger.With(slog.String("venue", "bybit"), slog.String("category", string(cfg.Market))),
		clock: venuekit.Clock{Now: cfg.Now, Interval: cfg.TimeSync},
	}
	return v, nil
}

// AcceptWindow is how long after a placement was sent Bybit may still accept
// it and show it to a lookup: the request's recv_window (Bybit refuses it
// after timestamp + recv_window), plus LookupLag for its order queries to
// catch up, plus ClockMargin for the error in the server-time offset.
// Defaults: 5 s + 10 s + 2 s = 17 s.
func (v *Venue) AcceptWindow() time.Duration {
	return v.cfg.RecvWindow + v.cfg.LookupLag + v.cfg.ClockMargin
}

// RefusesLateRequests is false (see exchange.LateRefuser): a "not found"
// after AcceptWindow does not prove a Bybit order will never exist. Bybit
// documents recv_window as a check on receipt only, and its create is
// asynchronous ("This request is asynchronous", create-order.mdx; history
// "may delay", order-list.mdx), so a create can be booked after its window
// (bybitfake.LateInEngine). The orderLinkId, "always unique", keeps an
// order sent again under the same ID from being a second one, but a key
// settled not placed is never sent again under that ID: the resent signal
// would go out under a new one, and a late original would make a second
// order. So a missing order is sent again only under its own ID
// (KeepsClientOrderIDs), and its key is never freed.
func (v *Venue) RefusesLateRequests() bool { return false }

// KeepsClientOrderIDs (exchange.IDKeeper) is true, on linear and spot:
// Bybit refuses an orderLinkId it has seen once, for ever ("Futures, Perps
// & Spot: orderLinkId rules: … always unique", create-order.mdx:74), so a missing order may be sent again under its own
// ID (a trailing stop, the position's setting, is one setting however
// often it is set).
func (v *Venue) KeepsClientOrderIDs() bool { return true }

// Category returns the category this venue trades.
func (v *Venue) Market() Market { return v.cfg.Market }

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
	ReasonHedgeMode         = "the account is in hedge mode; hoox trades one-way mode: switch the USDT perpetuals' Position Mode to One-Way (Bybit: Trade > Preferences > Position Mode, or POST /v5/position/switch-mode mode=0)"
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
	// The exits attached to the entry (create-order.mdx). Linear sends
	// tpslMode Partial, so the take-profit and stop-loss cover what this
	// order fills and never replace those of an earlier entry on the same
	// position (Full would), with Market orders triggered by the last
	// price (Bybit's default, said explicitly). Spot orders never carry
	// them (ReasonSpotTPSL).
	TakeProfit  string `json:"takeProfit,omitempty"`
	StopLoss    string `json:"stopLoss,omitempty"`
	TpslMode    string `json:"tpslMode,omitempty"`
	TpTriggerBy string `json:"tpTriggerBy,omitempty"`
	SlTriggerBy string `json:"slTriggerBy,omitempty"`
	TpOrderType string `json:"tpOrderType,omitempty"`
	SlOrderType string `json:"slOrderType,omitempty"`
}

// outgoing is an order as it goes on the wire, after rounding.
type outgoing struct {
	symbol     string
	side       string // buy or sell
	market     bool
	qty        decimal.Decimal
	price      decimal.NullDecimal // limit only
	reduceOnly bool
	clientID   string
	// tp and sl are the attached exits' trigger prices (invalid: none).
	tp, sl decimal.NullDecimal
}

// Place sends o as one Bybit order under orderLinkId o.ClientOrderID and
// reports it: validate (what can be refused without asking Bybit), prepare
// (filters, close resolution, rounding, minimums, leverage), send (the
// create and its confirmation). An accepted order whose state cannot be
// learnt (see confirm) is ErrUnknownOutcome, never an open order nobody
// re-checks.
//
// The order is stamped (X-BAPI-TIMESTAMP) with Bybit's time at Place's
// start, before the reads it needs first (server time, instruments-info,
// ticker, position or balance, set-leverage), so that it expires no later
// than recv_window after the gateway's intent: a reconcile that waits out
// AcceptWindow from there knows the order can no longer be accepted. If
// those reads outlast recv_window, Bybit refuses the order unexecuted
// (10002, ErrUnreachable) and Place does not send it again.
func (v *Venue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop {
		return v.placeTrailing(ctx, o)
	}
	start := v.cfg.Now()
	// Every failure before the send is an error (a refused read too: the
	// order was never judged by Bybit), named with the order.
	failed := func(err error) error { return fmt.Errorf("bybit place %s: %w", o.ClientOrderID, err) }
	r, err := venuekit.Place(ctx, venuekit.Steps[outgoing]{
		Validate: func() string { return v.validate(o) },
		Stamp: func(ctx context.Context) (time.Time, error) {
			if err := v.ensureTime(ctx); err != nil {
				return time.Time{}, failed(err)
			}
			return v.serverTimeAt(start), nil
		},
		Prepare: func(ctx context.Context) (outgoing, string, error) { return v.prepare(ctx, o) },
		Failed:  func(err error) (exchange.Report, error) { return exchange.Report{}, failed(err) },
		Send:    v.send,
	})
	if err == nil && r.Status == exchange.StatusFilled && v.cfg.Market == MarketLinear && exchange.IsClose(o.Action) &&
		(!o.Partial || exchange.WholePosition(o.Sizing)) && o.Split == nil {
		// A close of the whole position: read flat after it, the
		// position's trailing stop went with it (trading-stop.mdx: "The
		// system will cancel these orders if the position is closed").
		// Not flat (an entry filled beside the close), it stays on the
		// position. A failed read only leaves the fact unsaid.
		pos, perr := v.readPosition(ctx, exchange.VenueSymbol(o.Symbol))
		switch {
		case perr != nil:
			v.log.WarnContext(ctx, "bybit: a close of the whole position filled, but the position could not be read again",
				"client_order_id", o.ClientOrderID, "error", perr)
		case !pos.size.IsPositive():
			r.PositionClosed = true
		}
	}
	return r, err
}

// validate returns why o cannot be sent at all, or "". Refused here,
// before anything is sent: Bybit would answer a param error, and an order
// hoox cannot look up by its ID must not exist.
func (v *Venue) validate(o exchange.Order) string {
	switch {
	case !orderLinkIDPattern.MatchString(o.ClientOrderID):
		return ReasonClientOrderID
	case o.OrderType != "market" && o.OrderType != "limit":
		return ReasonBadOrderType + ": " + o.OrderType
	case v.cfg.Market == MarketSpot && o.Action == "short":
		// A short on spot would be a plain sell of the base coin held:
		// the strategy meant to open a short, and selling what the
		// account holds instead is a trade nobody asked for.
		return ReasonSpotShort
	case o.TrailingStop != nil:
		// A trailing stop is the position's setting, made after the fill
		// as a leg (TrailsAsLeg): an order carrying one would go out
		// without it.
		return "a bybit order cannot carry trailing_stop: it is set on the position once the entry filled"
	case o.HasAttachments() && exchange.IsClose(o.Action):
		// create-order.mdx: "When reduceOnly is true, take profit/stop
		// loss cannot be set". The signal refuses it first.
		return "a close takes no take_profit/stop_loss"
	}
	if o.HasAttachments() {
		// The gateway refuses these before claiming; an order reaching
		// here with them anyway is refused, never sent without them.
		return v.RefuseAttachments(o)
	}
	return ""
}

// prepare reads what the order needs (filters, the position or balance a
// close flattens, the ticker for a market order's notional), rounds it to
// the filters, checks the minimums and sets the leverage, returning the
// order to send or why it is refused. A lost answer to any of these reads
// placed nothing (asUnreachable).
func (v *Venue) prepare(ctx context.Context, o exchange.Order) (outgoing, string, error) {
	out := outgoing{
		symbol: exchange.VenueSymbol(o.Symbol), side: o.Side, market: o.OrderType == "market", qty: o.Quantity,
		reduceOnly: o.ReduceOnly && v.cfg.Market == MarketLinear, clientID: o.ClientOrderID,
	}
	f, found, err := v.filtersFor(ctx, out.symbol)
	if err != nil {
		return out, "", asUnreachable(err)
	}
	if !found {
		return out, ReasonUnknownSymbol + ": " + out.symbol, nil
	}
	if f.status != "" && f.status != "Trading" {
		return out, ReasonNotTrading + ": " + f.status, nil
	}
	var pos position
	if v.cfg.Market == MarketLinear {
		// Read every time: the position mode and the leverage may have
		// been changed behind hoox's back (the app, another replica).
		if pos, err = v.readPosition(ctx, out.symbol); err != nil {
			return out, "", err
		}
		if pos.hedge {
			return out, ReasonHedgeMode, nil
		}
	}
	if exchange.IsClose(o.Action) {
		side, qty, reason, err := v.resolveClose(ctx, o, f, pos)
		if err != nil || reason != "" {
			return out, reason, err
		}
		out.side, out.qty, out.market, out.reduceOnly = side, qty, true, v.cfg.Market == MarketLinear
	}
	if out.side != "buy" && out.side != "sell" {
		return out, fmt.Sprintf("invalid side %q", out.side), nil
	}

	out.qty = venuekit.FloorTo(out.qty, f.step)
	if !out.market {
		if !o.Price.Valid {
			return out, ReasonLimitWithoutPrice, nil
		}
		out.price = decimal.NewNullDecimal(venuekit.RoundPrice(o.Price.Decimal, f.tick, out.side))
	}
	var reason string
	if out.tp, out.sl, reason = venuekit.AttachedPrices(o, out.side, f.tick); reason != "" {
		return out, reason, nil
	}
	if !out.qty.IsPositive() || out.qty.LessThan(f.minQty) {
		return out, fmt.Sprintf("%s: %s rounds down to %s (step %s, minimum %s)",
			ReasonBelowMinQty, o.Quantity, out.qty, f.step, f.minQty), nil
	}
	// A reduce-only order (a close) is not checked against the minimum
	// notional here: Bybit's docs do not say whether it applies to one
	// (Binance futures exempts them), so Bybit decides. Refusing it here
	// could leave a small position that hoox can never close.
	if f.minNotional.IsPositive() && !out.reduceOnly {
		ref := out.price
		if !ref.Valid && o.Price.Valid && !exchange.IsClose(o.Action) {
			ref = o.Price
		}
		if !ref.Valid {
			last, err := v.tickerPrice(ctx, out.symbol)
			if err != nil {
				return out, "", asUnreachable(err)
			}
			ref = decimal.NewNullDecimal(last)
		}
		if n := out.qty.Mul(ref.Decimal); n.LessThan(f.minNotional) {
			return out, fmt.Sprintf("%s: %s × %s = %s < %s", ReasonBelowMinNotional, out.qty, ref.Decimal, n, f.minNotional), nil
		}
	}
	// Judged on what is sent: a sell of 0.0105 sent as 0.010 against a
	// long of 0.010 only closes it.
	sent := o
	sent.Quantity = out.qty
	if v.cfg.Market == MarketLinear && venuekit.SetsLeverage(sent, pos.signed()) {
		reason, err := v.ensureLeverage(ctx, out.symbol, pos.leverage, o.Leverage)
		if err != nil || reason != "" {
			return out, reason, err
		}
	}
	return out, "", nil
}

// send creates out, stamped stamp, and learns its state (confirm). A
// refusal for good is a rejected Report naming what was sent.
func (v *Venue) send(ctx context.Context, out outgoing, stamp time.Time) (exchange.Report, error) {
	body := createBody{
		Category: string(v.cfg.Market), Symbol: out.symbol, Side: bybitSide(out.side),
		OrderType: bybitOrderType(out.market), Qty: out.qty.String(), OrderLinkID: out.clientID,
	}
	if out.price.Valid {
		body.Price, body.TimeInForce = out.price.Decimal.String(), "GTC"
	}
	if v.cfg.Market == MarketLinear {
		zero := 0 // one-way mode
		body.PositionIdx, body.ReduceOnly = &zero, &out.reduceOnly
	} else if out.market {
		body.MarketUnit = "baseCoin"
	}
	if out.tp.Valid || out.sl.Valid {
		if out.tp.Valid {
			body.TakeProfit, body.TpOrderType = out.tp.Decimal.String(), "Market"
		}
		if out.sl.Valid {
			body.StopLoss, body.SlOrderType = out.sl.Decimal.String(), "Market"
		}
		if v.cfg.Market == MarketLinear {
			body.TpslMode = "Partial"
			if out.tp.Valid {
				body.TpTriggerBy = "LastPrice"
			}
			if out.sl.Valid {
				body.SlTriggerBy = "LastPrice"
			}
		}
	}
	var ack struct {
		OrderID     string `json:"orderId"`
		OrderLinkID string `json:"orderLinkId"`
	}
	err := v.do(ctx, request{method: http.MethodPost, path: "/v5/order/create", body: body, private: true, placement: true, stamp: stamp}, &ack)
	if err != nil {
		var e *APIError
		if errors.As(err, &e) && e.Refused() {
			if e.Class == ClassFilter {
				v.dropFilters(out.symbol)
			}
			v.log.InfoContext(ctx, "bybit rejected the order", slog.String("client_order_id", out.clientID),
				slog.String("symbol", out.symbol), slog.Int("ret_code", e.Code), slog.String("ret_msg", e.Msg))
			r := rejected(e.Msg)
			r.Symbol, r.Side, r.Quantity, r.Price = out.symbol, out.side, out.qty, out.price
			r.TakeProfit, r.StopLoss = out.tp, out.sl
			if r.Reason == "" {
				r.Reason = fmt.Sprintf("bybit http %d", e.HTTPStatus)
			}
			return r, nil
		}
		return exchange.Report{}, fmt.Errorf("bybit place %s: %w", out.clientID, err)
	}
	// The answer only acknowledges; the order's state needs a query.
	return v.confirm(ctx, out.symbol, out.clientID, ack.OrderID, out.market)
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
	var last error
	var final exchange.Report
	try := func() bool {
		r, err := v.find(ctx, sym, linkID, false)
		switch {
		case err == nil && (!market || r.Status != exchange.StatusOpen):
			final = r
			return true
		case err == nil:
			last = fmt.Errorf("bybit shows it %s, not yet final", r.Status)
		default:
			last = err
		}
		return false
	}
	if !try() {
		if err := venuekit.Poll(ctx, v.cfg.ConfirmWait, try); err != nil {
			last = err
		}
	}
	if final.Status != "" {
		return final, nil
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
	if o.Exit == exchange.RoleTrailingStop {
		return v.lookupTrailing(ctx, o)
	}
	sym := exchange.VenueSymbol(o.Symbol)
	r, err := v.find(ctx, sym, o.ClientOrderID, true)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, err)
	}
	sent, err := v.sentQuantity(ctx, o, sym, r.Quantity)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup %s: %w", o.ClientOrderID, err)
	}
	if err := exchange.Matches(o, sym, sent, r); err != nil {
		return exchange.Report{}, fmt.Errorf("bybit lookup: %w", err)
	}
	// The attached take-profit and stop-loss are not compared with o's:
	// Bybit lets the trader change them on an open order (amend, or the
	// app), and the order is still this signal's (its hoox-made
	// orderLinkId, symbol, side and size say so; the claim's fingerprint
	// guards a reused key). The report carries what Bybit holds, so the
	// record shows it.
	return r, nil
}

// sentQuantity is the quantity o went out as, for comparing with held,
// the quantity of the order Bybit holds under o's ID: prepare rounds it
// down to the step before sending, after the intent recorded o.Quantity.
// held is taken as o's own rounding when it is o.Quantity rounded down to
// held's last digit (venuekit.RoundedFrom) — true of every rounding to a step that
// is a power of ten, as qtyStep and basePrecision are — without asking
// instruments-info: it lists only Trading symbols ("By default returns
// only Trading symbols", "Spot has Trading only", market/instrument.mdx),
// so once a symbol is delisted or suspended the step is gone, while the
// order placed before must still be recognised as this signal's. Only a
// quantity that is no such rounding reads the step, if Bybit still lists
// the symbol. A close's quantity comes from the position and is not
// compared (exchange.Matches).
func (v *Venue) sentQuantity(ctx context.Context, o exchange.Order, sym string, held decimal.Decimal) (decimal.Decimal, error) {
	if exchange.IsClose(o.Action) || venuekit.RoundedFrom(held, o.Quantity) {
		return held, nil
	}
	f, found, err := v.filtersFor(ctx, sym)
	if err != nil {
		return decimal.Zero, err
	}
	if !found {
		return o.Quantity, nil
	}
	return venuekit.FloorTo(o.Quantity, f.step), nil
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
	// TakeProfit and StopLoss are the exits set on the order ("" or "0":
	// none).
	TakeProfit string `json:"takeProfit"`
	StopLoss   string `json:"stopLoss"`
	// CumFeeDetail is the cumulative fee per coin, for linear and spot
	// (order/open-order.mdx: cumExecFee is deprecated there).
	CumFeeDetail map[string]string `json:"cumFeeDetail"`
}

// find queries realtime, then history for its default last 7 days, for
// linkID; older (a Lookup, not Place's confirm) then walks history back 7
// days per query over HistoryLookback, since a history query without a
// time range covers only the last 7 days and one with a range at most 7
// days (order-list.mdx, startTime). order-list.mdx does not say which of
// the order's times the range selects on; the walk covers the weeks from
// its creation to its fill whichever it is, newest first, and stops at the
// first window that holds it.
func (v *Venue) find(ctx context.Context, sym, linkID string, older bool) (exchange.Report, error) {
	base := url.Values{"category": {string(v.cfg.Market)}, "symbol": {sym}, "orderLinkId": {linkID}}
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
		if err := v.do(ctx, request{method: http.MethodGet, path: qu.path, query: qu.query, private: true}, &res); err != nil {
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
// Untriggered and Triggered are open; Filled is filled. A limit order that
// closed otherwise (Cancelled, PartiallyFilledCanceled, Deactivated) is
// cancelled — with what filled before in FilledQuantity — and Rejected is
// rejected: the follow job records how a resting order ended (Bybit has no
// expired status; enum.mdx, orderStatus). A closed market order is filled
// when anything executed — a market order is an IOC that Bybit cancels
// after a partial fill — else rejected. A status Bybit may add later counts
// as open: not final, so the gateway keeps asking.
func toReport(oi orderInfo) exchange.Report {
	executed := dec(oi.CumExecQty)
	r := exchange.Report{
		ExchangeOrderID: oi.OrderID, Symbol: oi.Symbol, Side: strings.ToLower(oi.Side),
		Quantity: dec(oi.Qty), FilledQuantity: executed, Status: exchange.StatusOpen,
	}
	limit := oi.OrderType == "Limit"
	if limit {
		r.Price = decimal.NewNullDecimal(dec(oi.Price))
	}
	if p := dec(oi.TakeProfit); p.IsPositive() {
		r.TakeProfit = decimal.NewNullDecimal(p)
	}
	if p := dec(oi.StopLoss); p.IsPositive() {
		r.StopLoss = decimal.NewNullDecimal(p)
	}
	fill := dec(oi.AvgPrice)
	if !fill.IsPositive() && executed.IsPositive() {
		fill = dec(oi.CumExecValue).DivRound(executed, 16)
	}
	if executed.IsPositive() && fill.IsPositive() {
		r.AvgPrice = decimal.NewNullDecimal(fill)
	}
	r.Fee, r.FeeAsset = feeOf(oi.CumFeeDetail)
	switch oi.OrderStatus {
	case "Filled":
		r.Status, r.FillPrice = exchange.StatusFilled, decimal.NewNullDecimal(fill)
	case "Cancelled", "PartiallyFilledCanceled", "Deactivated":
		if limit {
			r.Status = exchange.StatusCancelled
			break
		}
		fallthrough
	case "Rejected":
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

// feeOf reads cumFeeDetail: the fee in its one coin (the settle coin on
// linear, the coin received on spot). Were there several coins, the first
// in name order is kept.
func feeOf(detail map[string]string) (decimal.Decimal, string) {
	coins := make([]string, 0, len(detail))
	for c := range detail {
		coins = append(coins, c)
	}
	slices.Sort(coins)
	for _, c := range coins {
		if fee := dec(detail[c]); !fee.IsZero() {
			return fee, c
		}
	}
	return decimal.Zero, ""
}

// rejected is a refusal for good decided before sending: nothing reached
// the venue, so the report names no symbol or quantity.
func rejected(reason string) exchange.Report { return venuekit.Rejected(reason) }

// isRefusal reports whether err is Bybit refusing the request for good.
func isRefusal(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Refused()
}

func bybitSide(side string) string {
	if side == "sell" {
		return "Sell"
	}
	return "Buy"
}

func bybitOrderType(market bool) string {
	if market {
		return "Market"
	}
	return "Limit"
}
