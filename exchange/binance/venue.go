// Package binance is hoox's venue adapter for Binance spot (/api/v3) and
// USDⓈ-M futures (/fapi/v1), one Venue per market and account.
//
// It places every order under the gateway's client order ID
// (newClientOrderId) and finds it again by that ID (origClientOrderId). That
// is what exactly-once rests on, and Binance makes it subtle: a client order
// ID is refused as a duplicate (spot -2010 "Duplicate order sent.", futures
// -4116) only while the earlier order under it is still open. Once that
// order filled, was cancelled or expired, Binance accepts the same ID again
// and creates a second order. A market order fills at once, so a blind
// re-place after a lost answer doubles the position; only a lookup first
// (exchange.PlaceOrAdopt with lookupFirst) is safe.
//
// Requests are signed with HMAC-SHA256 over the query string plus the body
// (Sign), stamped with Binance's clock as estimated from /time (refreshed
// every Config.TimeSync and after every -1021), and valid for
// Config.RecvWindow. An order is stamped with the time its Place started,
// not the time it is sent, so that it expires within AcceptWindow of the
// gateway's intent however long the reads before it took. Quantities are rounded down to the symbol's step and
// limit prices to its tick toward the passive side; an order that is then
// below the minimum quantity or notional is refused before anything is
// sent. Filters come from exchangeInfo, cached per symbol for
// Config.FilterTTL and dropped when Binance refuses an order on a filter.
//
// Futures assumes the account is in one-way position mode (positionSide
// BOTH): a close reads positionAmt and sends a reduce-only market order for
// all of it.
package binance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Reasons the adapter gives when it refuses an order itself, before
// sending it. Refusals by Binance carry Binance's own message.
const (
	ReasonNoPosition        = "no position to close"
	ReasonSpotNoShort       = "spot has no short position to close"
	ReasonSpotShort         = "short is not supported on spot: spot cannot open a short position (send sell to sell the base asset held)"
	ReasonInvalidOrder      = "invalid order"
	ReasonLimitWithoutPrice = "limit order without price"
	ReasonClientOrderID     = "client order id not allowed by binance (1-36 of A-Z a-z 0-9 . : / _ -)"
	ReasonHedgeMode         = "the account is in hedge mode; hoox trades one-way mode: switch the futures account's Position Mode to One-way (Binance: Preferences > Position Mode, or POST /fapi/v1/positionSide/dual dualSidePosition=false)"
	// ReasonPartialCloseBlocked follows Binance's -2022 message when a
	// close of part of the position is refused behind resting reduce-only
	// orders: hoox cancels them only for a close that flattens.
	ReasonPartialCloseBlocked = "reduce-only orders resting on the close's side (take-profits, stop-losses) leave too little of the position for this partial close; hoox cancels them only for a close of the whole position, since they protect what a partial close leaves open: cancel or reduce them, or close the whole position"
)

// clientOrderIDPattern is Binance's documented rule for newClientOrderId.
var clientOrderIDPattern = regexp.MustCompile(`^[.A-Z:/a-z0-9_-]{1,36}$`)

// Venue is one Binance account on one market. It is safe for concurrent
// use.
type Venue struct {
	cfg    Config
	prefix string
	log    *slog.Logger

	clock   venuekit.Clock
	pauses  venuekit.Pauses
	filters venuekit.FilterCache[Filters]
	// filterReads lets reads of exchangeInfo that miss the cache together
	// share one request (filtersFor).
	filterReads singleflight.Group

	mu           sync.Mutex
	usedWeight   int
	weightMinute int64
}

var _ exchange.Venue = (*Venue)(nil)

// New returns a Venue for cfg (defaults applied), or an error naming the
// setting that cannot work. It sends nothing: the first order reads the
// server time and the symbol's filters.
func New(cfg Config) (*Venue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	v := &Venue{
		cfg:    cfg,
		prefix: "/api/v3",
		log:    cfg.Logger.With("venue", "binance", "market", string(cfg.Market)),
		clock:  venuekit.Clock{Now: cfg.Now, Interval: cfg.TimeSync},
	}
	if cfg.Market == MarketFutures {
		v.prefix = "/fapi/v1"
	}
	return v, nil
}

func (v *Venue) futures() bool { return v.cfg.Market == MarketFutures }

// AcceptWindow is RecvWindow (Binance refuses a request older than that)
// plus LookupLag (the order query may lag the matching engine) plus
// ClockMargin (the error of the server-time offset).
func (v *Venue) AcceptWindow() time.Duration {
	return v.cfg.RecvWindow + v.cfg.LookupLag + v.cfg.ClockMargin
}

// RefusesLateRequests is true on USDⓈ-M futures, whose matching engine
// refuses an order it reaches after timestamp + recvWindow (-5028), and
// false on spot: Binance's spot docs say the recvWindow checks do not cover
// delays inside the matching engine, so a missing spot order is never sent
// again (see exchange.LateRefuser).
func (v *Venue) RefusesLateRequests() bool { return v.futures() }

var _ exchange.OrderLateRefuser = (*Venue)(nil)

// RefusesLateRequest narrows RefusesLateRequests per order: on USDⓈ-M only
// an order sent to the plain order endpoint is refused late. The matching
// engine's recvWindow check (-5028) covers the endpoints the derivatives
// change log lists for it (change-log.md, 2023-04-17, USDⓈ-M: POST/PUT
// /fapi/v1/order, POST/PUT /fapi/v1/batchOrders); an exit goes to POST
// /fapi/v1/algoOrder (placeAlgo), which is not among them, and rests in
// the Algo Service, off the matching engine, until it triggers (change
// log 2025-11-06). Nothing in the docs refuses a late algo order, so one
// that went missing may still be booked: "not found" proves nothing, as
// on spot and for OKX's algo orders.
func (v *Venue) RefusesLateRequest(o exchange.Order) bool { return v.futures() && o.Exit == "" }

// outgoing is an order as it goes on the wire, after rounding.
type outgoing struct {
	symbol     string
	side       string // buy or sell
	market     bool
	qty        decimal.Decimal
	price      decimal.Decimal // limit only
	reduceOnly bool
	clientID   string
}

// Place sends o. Refusals for good — by this adapter before sending (below
// a filter minimum, no position to close) or by Binance — are a rejected
// Report with a nil error.
//
// The order is stamped with Binance's time at Place's start, before the
// reads it needs first (server time, filters, leverage, position or
// balance, ticker), so that it expires no later than recvWindow after the
// gateway's intent: a reconcile that waits out AcceptWindow from there
// knows the order can no longer be accepted. If those reads outlast
// recvWindow, Binance refuses the order unexecuted (-1021, ErrUnreachable)
// and Place does not send it again with a fresh timestamp.
func (v *Venue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit != "" && v.futures() {
		return v.placeAlgo(ctx, o)
	}
	if o.Exit == exchange.RoleOCO && !v.futures() {
		return v.placeOCO(ctx, o)
	}
	if o.Exit != "" {
		return v.placeSpotExit(ctx, o)
	}
	start := v.cfg.Now()
	symbol := exchange.VenueSymbol(o.Symbol)
	if reason := v.validate(o, symbol); reason != "" {
		return rejected(reason), nil
	}
	stamp, err := v.serverTimeAt(ctx, start)
	if err != nil {
		return exchange.Report{}, err
	}
	ctx = v.withOrderExpiry(ctx, stamp)
	f, fresh, err := v.filtersFor(ctx, symbol)
	if r, err, done := refusal(err); done {
		return r, err
	}
	var pos positionInfo
	if v.futures() {
		// Read every time: the position mode and the leverage may have
		// been changed behind hoox's back (the app, another replica).
		if pos, err = v.position(ctx, symbol); err != nil {
			r, err, _ := refusal(err)
			return r, err
		}
		if pos.hedge {
			return rejected(ReasonHedgeMode), nil
		}
		// Judged on what is sent (rounded to the step): a sell of 0.0105
		// sent as 0.010 against a long of 0.010 only closes it.
		sent := o
		sent.Quantity = f.RoundQuantity(o.Quantity, o.OrderType == "market")
		if venuekit.SetsLeverage(sent, pos.amount) {
			reason, err := v.ensureLeverage(ctx, symbol, pos.leverage, o.Leverage)
			if r, err, done := refusal(err); done {
				return r, err
			}
			if reason != "" {
				return rejected(reason), nil
			}
		}
	}
	out := outgoing{
		symbol: symbol, side: o.Side, market: o.OrderType == "market", qty: o.Quantity,
		reduceOnly: o.ReduceOnly && v.futures(), clientID: o.ClientOrderID,
	}
	if exchange.IsClose(o.Action) {
		var reason string
		out, reason, err = v.resolveClose(ctx, o, f, out, pos)
		if r, err, done := refusal(err); done {
			return r, err
		}
		if reason != "" {
			return rejected(reason), nil
		}
	}
	// Whatever ends the attempt once resting reduce-only orders were
	// cancelled for it reports them (CancelledFirst): a close refused
	// again after the cancel, or on a filter, still cancelled them.
	var cancelled []exchange.CancelledOrder
	r, err := func() (exchange.Report, error) {
		ctx := ctx
		for {
			sent, reason, err := v.prepare(ctx, o, f, out)
			if r, err, done := refusal(err); done {
				return r, err
			}
			if reason != "" {
				return rejected(reason), nil
			}
			r, err := v.send(ctx, sent, stamp)
			if err == nil && sent.market && r.Status == exchange.StatusOpen {
				r, err = v.confirm(ctx, sent, r)
				return r, err
			}
			apiErr, isAPI := errors.AsType[*APIError](err)
			// A close refused for good, nothing booked, because reduce-only
			// orders resting on its side block it. Only a refusal: a 5xx
			// carrying -2022 is unknown (do), and the close may have filled;
			// Binance would take its ID again once it has.
			blocked := isAPI && apiErr.Code == -2022 && apiErr.Refused() && v.futures() && exchange.IsClose(o.Action)
			if blocked && !flattens(o) {
				// The resting reduce-only orders protect the part of the
				// position this close leaves open: refused, nothing cancelled.
				return rejected(apiErr.Msg + " " + ReasonPartialCloseBlocked), nil
			}
			if blocked && cancelled == nil {
				// Cancel them and send the close again, under the same client
				// order ID, once. Not when the caller's send guard forbids
				// the close (the kill switch engaged since its intent): the
				// resting orders keep protecting the position.
				if err := exchange.CheckSendGuard(ctx); err != nil {
					return exchange.Report{}, fmt.Errorf("binance: close %s: resting reduce-only orders not cancelled: %w", sent.clientID, err)
				}
				if cancelled, err = v.cancelBlocking(ctx, sent); err != nil {
					return exchange.Report{}, err
				}
				// That check was the decision for the whole close: once the
				// orders protecting the position are gone, the close they
				// were cancelled for is sent whatever the guard says now (a
				// kill switch engaged during the cancel), or the position
				// would be left unprotected and the cancels unrecorded.
				ctx = exchange.WithoutSendGuard(ctx)
				v.log.InfoContext(ctx, "binance refused a close behind resting reduce-only orders; cancelled them and sending the close again",
					"client_order_id", sent.clientID, "cancelled", len(cancelled))
				continue
			}
			if !isAPI || apiErr.Class != ClassFilter {
				if isAPI && apiErr.Refused() {
					return rejected(apiErr.Msg), nil
				}
				return r, err
			}
			// Binance's filters differ from the cached ones: read them again,
			// and if they were not just read, try once more with them.
			v.dropFilters(symbol)
			if fresh {
				return rejected(apiErr.Msg), nil
			}
			v.log.InfoContext(ctx, "binance refused an order on a filter; filters re-read", "symbol", symbol, "msg", apiErr.Msg)
			f, fresh, err = v.filtersFor(ctx, symbol)
			if r, err, done := refusal(err); done {
				return r, err
			}
		}
	}()
	r.CancelledFirst = cancelled
	if err == nil {
		// The position is gone: so is the point of the exits that
		// protected it, which would otherwise cut the next one.
		r = v.closedExits(ctx, o, r, symbol, out.side, stamp)
	}
	return r, err
}

// flattens reports whether close o is meant to leave no position: a
// close of all of it, a percent_of_position close of 100 % (or more) of
// it, or the first part of either split over the venue's maximum market
// quantity (Split set: the other parts follow it). A percent_of_position
// exit of less and a later part of a split close (a leg: Partial, no
// Split, no Sizing) leave some of the position open, or may
// (cancelBlocking's premise does not hold for them).
func flattens(o exchange.Order) bool {
	return !o.Partial || (o.Split != nil && o.Sizing == nil) || exchange.WholePosition(o.Sizing)
}

// refusal turns err into Place's answer: a rejected Report for a refusal
// for good, err itself otherwise. done is false when err is nil.
func refusal(err error) (exchange.Report, error, bool) {
	if err == nil {
		return exchange.Report{}, nil, false
	}
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Refused() {
		return rejected(apiErr.Msg), nil, true
	}
	return exchange.Report{}, err, true
}

func rejected(reason string) exchange.Report { return venuekit.Rejected(reason) }

// validate returns why o cannot be sent at all, or "".
func (v *Venue) validate(o exchange.Order, symbol string) string {
	closing := exchange.IsClose(o.Action)
	switch {
	case !clientOrderIDPattern.MatchString(o.ClientOrderID):
		return ReasonClientOrderID
	case symbol == "":
		return ReasonInvalidOrder
	case !closing && o.Side != "buy" && o.Side != "sell":
		return ReasonInvalidOrder
	case closing && o.Side != "" && o.Side != "buy" && o.Side != "sell":
		return ReasonInvalidOrder
	case !closing && !o.Quantity.IsPositive():
		return ReasonInvalidOrder
	case o.OrderType != "market" && o.OrderType != "limit":
		return ReasonInvalidOrder
	case !closing && o.OrderType == "limit" && (!o.Price.Valid || !o.Price.Decimal.IsPositive()):
		return ReasonLimitWithoutPrice
	case !v.futures() && o.Action == "close_short":
		return ReasonSpotNoShort
	case !v.futures() && o.Action == "short":
		// A short on spot would be a plain sell of the base asset held:
		// the strategy meant to open a short, and selling what the
		// account holds instead is a trade nobody asked for.
		return ReasonSpotShort
	}
	return ""
}

// prepare rounds out to the filters and checks the minimums, returning the
// order to send or why it is refused. Market orders are checked against
// the notional with o's price when the signal gave one, else the ticker.
func (v *Venue) prepare(ctx context.Context, o exchange.Order, f Filters, out outgoing) (outgoing, string, error) {
	out.qty = f.RoundQuantity(out.qty, out.market)
	if reason := f.checkQuantity(out.qty, out.market); reason != "" {
		return out, reason, nil
	}
	ref := decimal.Zero
	if !out.market {
		out.price = f.RoundPrice(o.Price.Decimal, out.side)
		if reason := f.checkPrice(out.price); reason != "" {
			return out, reason, nil
		}
		ref = out.price
	}
	// Futures exempts reduce-only orders from MIN_NOTIONAL.
	if f.notionalApplies(out.market) && !(v.futures() && out.reduceOnly) {
		if out.market {
			if o.Price.Valid && o.Price.Decimal.IsPositive() {
				ref = o.Price.Decimal
			} else {
				p, err := v.tickerPrice(ctx, out.symbol)
				if err != nil {
					return out, "", err
				}
				ref = p
			}
		}
		if reason := f.checkNotional(out.qty, ref, out.market); reason != "" {
			return out, reason, nil
		}
	}
	return out, "", nil
}

// orderAnswer is Binance's order object, for both markets: spot's FULL
// placement answer and order query, futures' RESULT answer and order query.
type orderAnswer struct {
	Symbol              string          `json:"symbol"`
	OrderID             int64           `json:"orderId"`
	ClientOrderID       string          `json:"clientOrderId"`
	Price               decimal.Decimal `json:"price"`
	OrigQty             decimal.Decimal `json:"origQty"`
	ExecutedQty         decimal.Decimal `json:"executedQty"`
	CummulativeQuoteQty decimal.Decimal `json:"cummulativeQuoteQty"` // spot (sic)
	CumQuote            decimal.Decimal `json:"cumQuote"`            // futures
	AvgPrice            decimal.Decimal `json:"avgPrice"`            // futures
	Status              string          `json:"status"`
	Type                string          `json:"type"`
	Side                string          `json:"side"`
	// StopPrice and TrailingDelta are a spot conditional order's trigger
	// (rest-api.md, "Conditional fields in Order Responses").
	StopPrice     decimal.Decimal `json:"stopPrice"`
	TrailingDelta int64           `json:"trailingDelta"`
	// Fills are spot's FULL answer's trades, each with its commission
	// and the asset it was charged in (rest-api.md "Response FULL").
	Fills []fill `json:"fills"`
}

// fill is one execution of an order: an element of spot's FULL answer's
// fills, or of the account trade lists (myTrades, userTrades).
type fill struct {
	// ID is the trade's ID in the account trade lists (FULL answers'
	// fills call it tradeId and are not paged: zero there).
	ID              int64           `json:"id"`
	Price           decimal.Decimal `json:"price"`
	Qty             decimal.Decimal `json:"qty"`
	Commission      decimal.Decimal `json:"commission"`
	CommissionAsset string          `json:"commissionAsset"`
}

// fees sums the fills' commissions. Binance charges them all in the asset
// the order received, or all in BNB; should BNB run out mid-order, the
// fills charged in another asset than BNB are the ones reported, since
// they are what reduced the coins received (faqs/commission_faq.md), and
// the spot ledger nets them. mixed says a fill in another asset was left
// out. The order query carries no fills: its fee is unknown ("").
func fees(fills []fill) (fee decimal.Decimal, asset string, mixed bool) {
	sums := map[string]decimal.Decimal{}
	for _, f := range fills {
		if f.CommissionAsset == "" {
			continue
		}
		sums[f.CommissionAsset] = sums[f.CommissionAsset].Add(f.Commission)
		if asset == "" || asset == "BNB" {
			asset = f.CommissionAsset
		}
	}
	return sums[asset], asset, len(sums) > 1
}

// send places out, signed with timestamp stamp, and maps the answer.
func (v *Venue) send(ctx context.Context, out outgoing, stamp time.Time) (exchange.Report, error) {
	p := params{}.
		add("symbol", out.symbol).
		add("side", strings.ToUpper(out.side))
	if out.market {
		p = p.add("type", "MARKET")
	} else {
		p = p.add("type", "LIMIT").add("timeInForce", "GTC")
	}
	p = p.add("quantity", out.qty.String())
	if !out.market {
		p = p.add("price", out.price.String())
	}
	p = p.add("newClientOrderId", out.clientID)
	if v.futures() {
		if out.reduceOnly {
			p = p.add("reduceOnly", "true")
		}
		p = p.add("newOrderRespType", "RESULT")
	} else {
		// FULL carries the fills, for the average fill price.
		p = p.add("newOrderRespType", "FULL")
	}
	var a orderAnswer
	req := request{method: http.MethodPost, path: v.prefix + "/order", params: p, signed: true, weight: 1, placement: true, stamp: stamp}
	if err := v.do(ctx, req, &a); err != nil {
		return exchange.Report{}, fmt.Errorf("binance: place order %s: %w", out.clientID, err)
	}
	if a.OrderID == 0 || a.Status == "" {
		// A 200 without an order: Binance may hold it, this answer cannot
		// say.
		return exchange.Report{}, fmt.Errorf("binance: place order %s: answer without order status: %w", out.clientID, exchange.ErrUnknownOutcome)
	}
	return a.report(), nil
}

// confirm follows a market order Binance answered as not yet final (NEW,
// PARTIALLY_FILLED: the matching engine had not finished with it when the
// API answered) by querying it by its order ID, pausing 25 ms, doubling to
// 400 ms, for at most ConfirmWait within the caller's deadline. A final
// state is the answer. Otherwise Place answers ErrUnknownOutcome — never
// an open market order that nobody looks at again, and never
// ErrUnreachable: the order exists — and the gateway's reconcile follows
// it with Lookup.
func (v *Venue) confirm(ctx context.Context, out outgoing, placed exchange.Report) (exchange.Report, error) {
	p := params{}.add("symbol", out.symbol).add("orderId", placed.ExchangeOrderID)
	weight := 4
	if v.futures() {
		weight = 1
	}
	last := fmt.Errorf("binance answered it %s", placed.Status)
	var final exchange.Report
	err := venuekit.Poll(ctx, v.cfg.ConfirmWait, func() bool {
		var a orderAnswer
		if err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/order", params: p, signed: true, weight: weight}, &a); err != nil {
			last = err
			return false
		}
		if r := a.report(); r.Status != exchange.StatusOpen {
			final = v.withTradesFee(ctx, exchange.Order{Symbol: out.symbol, ClientOrderID: out.clientID}, r)
			return true
		}
		last = fmt.Errorf("binance shows it %s, not yet final", a.Status)
		return false
	})
	if final.Status != "" {
		return final, nil
	}
	if err != nil {
		last = err
	}
	v.log.WarnContext(ctx, "binance accepted the market order but it was not final while place asked; the gateway reconciles it",
		"client_order_id", out.clientID, "order_id", placed.ExchangeOrderID, "error", last)
	// %v, not %w: whatever the query's error wraps (ErrNotFound,
	// ErrUnreachable), the order was accepted.
	return exchange.Report{}, fmt.Errorf("binance: place order %s: accepted as order %s, but not final (%v): %w",
		out.clientID, placed.ExchangeOrderID, last, exchange.ErrUnknownOutcome)
}

// report maps Binance's order object onto a Report.
//
// A LIMIT order ends as Binance says (enums.md, Order status): CANCELED is
// cancelled and EXPIRED / EXPIRED_IN_MATCH expired, whatever filled before
// (FilledQuantity says it) — the follow job records how a resting order
// ended. A MARKET order that ends CANCELED or EXPIRED after a partial fill
// is filled for what executed (the position moved by that much), and with
// nothing executed rejected, as the gateway has always recorded it.
func (a orderAnswer) report() exchange.Report {
	r := exchange.Report{
		ExchangeOrderID: strconv.FormatInt(a.OrderID, 10),
		Symbol:          a.Symbol,
		Side:            strings.ToLower(a.Side),
		Quantity:        a.OrigQty,
		FilledQuantity:  a.ExecutedQty,
	}
	limit := a.Type == "LIMIT"
	if limit {
		r.Price = decimal.NewNullDecimal(a.Price)
	}
	if p := a.fillPrice(); a.ExecutedQty.IsPositive() && p.IsPositive() {
		r.AvgPrice = decimal.NewNullDecimal(p)
	}
	// Spot's FULL answer carries the commission of each fill (rest-api.md,
	// "Response FULL": fills[].commission, commissionAsset); the order
	// query does not, and FeeReader reads the trades for it.
	r.Fee, r.FeeAsset, _ = fees(a.Fills)
	if r.Fee.IsZero() {
		r.FeeAsset = ""
	}
	filled := func() {
		r.Status = exchange.StatusFilled
		r.FillPrice = r.AvgPrice
	}
	final := a.Status == "CANCELED" || a.Status == "EXPIRED" || a.Status == "EXPIRED_IN_MATCH" || a.Status == "REJECTED"
	switch {
	case a.Status == "FILLED":
		filled()
	case limit && a.Status == "CANCELED":
		r.Status = exchange.StatusCancelled
	case limit && (a.Status == "EXPIRED" || a.Status == "EXPIRED_IN_MATCH"):
		r.Status = exchange.StatusExpired
	case final:
		// With something executed it is a (partial) fill, and what
		// filled (FilledQuantity) is the position the signal now has: a
		// MARKET order that meets too little liquidity is EXPIRED after a
		// partial fill (enums.md), and must never read as rejected.
		if a.ExecutedQty.IsPositive() {
			filled()
			break
		}
		r.Status = exchange.StatusRejected
		r.Reason = "binance order " + strings.ToLower(a.Status) + " with nothing filled"
	default:
		// NEW, PARTIALLY_FILLED, PENDING_NEW, PENDING_CANCEL and anything
		// new: not final, so open.
		r.Status = exchange.StatusOpen
	}
	return r
}

// fillPrice is the average fill price: from spot's fills when present, else
// futures' avgPrice, else quote quantity over executed quantity.
func (a orderAnswer) fillPrice() decimal.Decimal {
	var quote, qty decimal.Decimal
	for _, f := range a.Fills {
		quote = quote.Add(f.Price.Mul(f.Qty))
		qty = qty.Add(f.Qty)
	}
	if qty.IsPositive() {
		return quote.Div(qty)
	}
	if a.AvgPrice.IsPositive() {
		return a.AvgPrice
	}
	quote = a.CummulativeQuoteQty
	if quote.IsZero() {
		quote = a.CumQuote
	}
	if a.ExecutedQty.IsPositive() && quote.IsPositive() {
		return quote.Div(a.ExecutedQty)
	}
	return decimal.Zero
}

// Lookup finds the latest order Binance holds under o.ClientOrderID for
// o's symbol; exchange.ErrNotFound when it holds none (or none yet: the
// query may lag a placement by up to LookupLag). An order that differs from
// o in symbol, side or quantity (as o was sent, rounded down to a step:
// sentQuantity) is an error wrapping exchange.ErrMismatch.
func (v *Venue) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit != "" && v.futures() {
		return v.lookupAlgo(ctx, o)
	}
	if o.Exit == exchange.RoleOCO && !v.futures() {
		return v.lookupOCO(ctx, o)
	}
	if o.Exit != "" {
		return v.lookupSpotExit(ctx, o)
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	p := params{}.add("symbol", symbol).add("origClientOrderId", o.ClientOrderID)
	weight := 4
	if v.futures() {
		weight = 1
	}
	var a orderAnswer
	err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/order", params: p, signed: true, weight: weight}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Code == -1121 && apiErr.Refused() {
		// No order can exist on a symbol Binance does not list. A 5xx
		// carrying -1121 proves nothing (do makes it unknown).
		return exchange.Report{}, fmt.Errorf("binance: look up order %s: %w: %w", o.ClientOrderID, exchange.ErrNotFound, err)
	}
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassArchived {
		// The order existed and ended with nothing executed (errors.md,
		// -2026 ORDER_ARCHIVED): final, and never a reason to place
		// again under the same ID.
		r := rejected("binance archived the order: " + apiErr.Msg)
		r.Symbol = symbol
		return r, nil
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up order %s: %w", o.ClientOrderID, err)
	}
	r := a.report()
	sent := r.Quantity
	if !exchange.IsClose(o.Action) {
		if sent, err = v.sentQuantity(ctx, symbol, o.Quantity, r.Quantity, o.OrderType == "market"); err != nil {
			return exchange.Report{}, fmt.Errorf("binance: look up order %s: %w", o.ClientOrderID, err)
		}
	}
	if err := exchange.Matches(o, symbol, sent, r); err != nil {
		return exchange.Report{}, fmt.Errorf("binance: %w", err)
	}
	// A close hoox finds filled here (its answer was lost, or it was
	// answered NEW and filled since) closed the position as Place's own
	// answer would have said: its exits go as they would have there when
	// the position is flat. Not flat, Place kept the exits created after
	// its stamp (before its position read); the order's creation time
	// ("time", Query-Order.md) is after that read, so an exit of an entry
	// that filled in between would be taken for the closed position's:
	// with no bound known here, nothing is cancelled.
	r = v.closedExits(ctx, o, r, symbol, r.Side, time.Time{})
	return v.withTradesFee(ctx, o, r), nil
}

// sentQuantity is the quantity hoox sent for an order of asked base
// units, for comparing with held, the quantity of the order Binance holds
// under its ID: asked rounded down to the step it was placed under.
// Binance changes a symbol's LOT_SIZE step while orders rest, and a
// resting order keeps the quantity it was accepted with (filters.md
// defines them as trading rules, checked when an order is placed; nothing
// in the docs amends resting orders), so held is taken as sent when it is asked rounded down to
// held's own last digit (venuekit.RoundedFrom: every LOT_SIZE and
// MARKET_LOT_SIZE step is a power of ten) — whatever the step is today,
// and without reading it. Any other held quantity is compared with asked
// rounded under today's filters (market: MARKET_LOT_SIZE too).
func (v *Venue) sentQuantity(ctx context.Context, symbol string, asked, held decimal.Decimal, market bool) (decimal.Decimal, error) {
	if held.Equal(asked) || venuekit.RoundedFrom(held, asked) {
		return held, nil
	}
	f, _, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return decimal.Zero, err
	}
	return f.RoundQuantity(asked, market), nil
}

// withTradesFee adds the commission of a spot order that ended having
// filled something to a report read from the order query, which carries
// no fills (rest-api.md "Query order"): from the order's trades (Fees).
// An order still open is left to the follow job, which reads its fees as
// it executes. A failed read leaves the fee unknown, logged: the order's
// fate, not its fee, is what the caller needs, and the spot ledger then
// counts the fill gross (a close still never sells more than the free
// balance).
func (v *Venue) withTradesFee(ctx context.Context, o exchange.Order, r exchange.Report) exchange.Report {
	if v.futures() || r.FeeAsset != "" || !r.Status.Final() || !r.FilledQuantity.IsPositive() || r.ExchangeOrderID == "" {
		return r
	}
	withFee, err := v.Fees(ctx, o, r)
	if err != nil {
		v.log.WarnContext(ctx, "binance: the order's trades could not be read; its fee is unknown",
			"symbol", r.Symbol, "order_id", r.ExchangeOrderID, "error", err)
		return r
	}
	return withFee
}
