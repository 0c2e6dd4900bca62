// Package okx is hoox's venue adapter for OKX's v5 REST API: spot
// (instType SPOT, exchange name `okx`) and USDT-margined perpetual swaps
// (instType SWAP, `okx-swap`), one Venue per market and account.
//
// Every order carries the gateway's client order ID as clOrdId and is
// found again by it (GET /api/v5/trade/order?clOrdId=). OKX keeps a
// clOrdId unique only "among the clOrdIds of all pending orders", as
// Binance does: once an order filled or was cancelled, OKX accepts the
// same ID again, so a retry must look the order up first
// (exchange.PlaceOrAdopt with lookupFirst), which the gateway does.
//
// Requests are signed as OKX documents (Base64 HMAC-SHA256 over timestamp
// + method + path + body, with the key's passphrase), stamped with OKX's
// clock as estimated from /api/v5/public/time. An order carries expTime =
// its stamp + Config.Expiry: OKX does not process an order request whose
// expTime has passed on its clock, which is what RefusesLateRequests
// rests on. Quantities are rounded down to the lot size (converted to
// contracts with ctVal on swaps) and limit prices to the tick toward the
// passive side; an order below minSz is refused before anything is sent.
//
// Swaps assume the account's net (one-way) position mode and cross
// margin: a close reads the net position and sends a reduce-only market
// order for all of it.
package okx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Reasons the adapter gives when it refuses an order itself, before
// sending it. Refusals by OKX carry OKX's own message.
const (
	ReasonNoPosition        = "no position to close"
	ReasonSpotNoShort       = "spot has no short position to close"
	ReasonSpotShort         = "short is not supported on spot: spot cannot open a short position (send sell to sell the base currency held)"
	ReasonInvalidOrder      = "invalid order"
	ReasonLimitWithoutPrice = "limit order without price"
	ReasonUnknownSymbol     = "unknown symbol"
	ReasonNotTrading        = "instrument is not live"
	ReasonClientOrderID     = "client order id not allowed by okx (1-32 of A-Z a-z 0-9)"
	ReasonHedgeMode         = "the account is in hedge mode; hoox trades one-way mode: switch the account's Position mode to One-way (OKX: Settings > Position mode, or POST /api/v5/account/set-position-mode posMode=net_mode)"
)

// clOrdIDPattern is OKX's rule for clOrdId: "a combination of
// case-sensitive alphanumerics, all numbers, or all letters of up to 32
// characters". hoox needs the ID to find the order again, so an empty one
// is refused too.
var clOrdIDPattern = regexp.MustCompile(`^[A-Za-z0-9]{1,32}$`)

// Venue is one OKX account on one market. It is safe for concurrent use.
type Venue struct {
	cfg Config
	log *slog.Logger

	clock   venuekit.Clock
	pauses  venuekit.Pauses
	filters venuekit.FilterCache[Filters]
}

var _ exchange.Venue = (*Venue)(nil)

// New returns a Venue for cfg (defaults applied), or an error naming what
// cannot work. It sends nothing.
func New(cfg Config) (*Venue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("okx config: %w", err)
	}
	return &Venue{
		cfg:   cfg,
		log:   cfg.Logger.With("venue", "okx", "market", string(cfg.Market)),
		clock: venuekit.Clock{Now: cfg.Now, Interval: cfg.TimeSync},
	}, nil
}

func (v *Venue) swap() bool { return v.cfg.Market == MarketSwap }

// AcceptWindow is Expiry (OKX does not process an order after its
// expTime) plus LookupLag (the order query may trail the engine) plus
// ClockMargin (the error of the server-time offset).
func (v *Venue) AcceptWindow() time.Duration {
	return v.cfg.Expiry + v.cfg.LookupLag + v.cfg.ClockMargin
}

// RefusesLateRequests is true (see exchange.LateRefuser) and rests on
// expTime: OKX's "Transaction timeouts" section says a place-order
// request "will not be processed if the current system time of the server
// is after the expTime" (code 50037, "Order expired."), and offers it for
// requests delayed by the network or busy servers. A missing order whose
// accept window has closed can therefore never appear later, even though
// clOrdId is unique only among pending orders.
func (v *Venue) RefusesLateRequests() bool { return true }

// outgoing is an order as it goes on the wire, after rounding, with its
// quantity in the base currency.
type outgoing struct {
	instID     string
	side       string // buy or sell
	market     bool
	qty        decimal.Decimal
	price      decimal.Decimal // limit only
	reduceOnly bool
	clientID   string
	// tp and sl are the attached exits' trigger prices (invalid: none).
	tp, sl decimal.NullDecimal
}

// Place sends o: validate (what can be refused without asking OKX),
// prepare (instrument rules, close resolution, rounding, minimum,
// leverage), send (the order and, for a market order, its final state).
// Refusals for good are a rejected Report with a nil error.
//
// The order is stamped with OKX's time at Place's start, before the reads
// it needs first, and expires Expiry later (expTime): a reconcile that
// waits out AcceptWindow from there knows the order can no longer be
// processed.
func (v *Venue) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop {
		return v.placeTrailing(ctx, o)
	}
	start := v.cfg.Now()
	symbol := exchange.VenueSymbol(o.Symbol)
	var f Filters
	var sent outgoing
	var stamped time.Time
	r, err := venuekit.Place(ctx, venuekit.Steps[outgoing]{
		Validate: func() string { return v.validate(o, symbol) },
		Stamp:    func(ctx context.Context) (time.Time, error) { return v.serverTime(ctx, start) },
		Prepare: func(ctx context.Context) (out outgoing, reason string, err error) {
			f, out, reason, err = v.prepare(ctx, o, symbol)
			return out, reason, err
		},
		// OKX's refusal of a read (the instrument, the position) is the
		// order's refusal for good.
		Failed: func(err error) (exchange.Report, error) {
			if e, ok := errors.AsType[*APIError](err); ok && e.Refused() {
				return rejected(e.Msg), nil
			}
			return exchange.Report{}, err
		},
		Send: func(ctx context.Context, out outgoing, stamp time.Time) (exchange.Report, error) {
			sent, stamped = out, stamp
			return v.send(ctx, f, out, stamp)
		},
	})
	if err == nil {
		// The position is gone: so is the point of the exits that
		// protected it, which OKX may leave live to cut the next one.
		r = v.closedExits(ctx, o, r, f, sent.side, stamped)
	}
	return r, err
}

// closedExits cancels hoox's exits that filled swap close o (r, OKX's
// answer or lookup of it; side its executed side) left live with nothing
// to protect, wherever hoox first learns the close filled: Place's own
// answer (started: OKX's clock before its position read) or Lookup's (a
// retry's adoption after a lost answer, the reconcile, the sweeper, the
// follow job; started zero: Lookup does not know when the close read the
// position), and for every close — a part of a split close, a
// percent_of_position share — not only a close of the whole position in
// one order. See cancelClosedExits for which exits go; whole says o was a
// close of the whole position in one order (flattens, no Split: not a
// part, nor a share of less) that executed all it was sent for (a close
// OKX cut short at its price limit, report, is not). Only swap closes
// that executed something: an exit (a trailing stop) is not a close of a
// position. r.ClosedPosition says the position the close closed is gone,
// for the gateway's catch of an exit whose send was on its way
// (CancelExitsAfterClose).
func (v *Venue) closedExits(ctx context.Context, o exchange.Order, r exchange.Report, f Filters, side string, started time.Time) exchange.Report {
	if !v.swap() {
		return r
	}
	return exchange.ClosedExits(o, r, started, func(cutoff time.Time, whole bool) ([]exchange.CancelledOrder, bool, bool) {
		return v.cancelClosedExits(ctx, f, side, o.ClientOrderID, cutoff, whole)
	})
}

// validate returns why o cannot be sent at all, or "".
func (v *Venue) validate(o exchange.Order, symbol string) string {
	closing := exchange.IsClose(o.Action)
	switch {
	case !clOrdIDPattern.MatchString(o.ClientOrderID):
		return ReasonClientOrderID
	case symbol == "":
		return ReasonInvalidOrder
	case !closing && o.Side != "buy" && o.Side != "sell":
		return ReasonInvalidOrder
	case !closing && !o.Quantity.IsPositive():
		return ReasonInvalidOrder
	case o.OrderType != "market" && o.OrderType != "limit":
		return ReasonInvalidOrder
	case !closing && o.OrderType == "limit" && (!o.Price.Valid || !o.Price.Decimal.IsPositive()):
		return ReasonLimitWithoutPrice
	case !v.swap() && o.Action == "short":
		return ReasonSpotShort
	case o.HasAttachments() && closing:
		// 51100: "Take profit/Stop loss conditions cannot be added to
		// reduce-only orders". The signal refuses it first.
		return ReasonInvalidOrder + ": a close takes no take_profit/stop_loss"
	case o.TrailingStop != nil:
		// A trailing stop is its own algo order (a leg the gateway
		// plans): an entry carrying one is never sent without it.
		return ReasonInvalidOrder + ": a trailing_stop is placed as its own algo order, not on the entry"
	case o.HasAttachments():
		// The gateway refuses these before claiming; an order reaching
		// here with them anyway is refused, never sent without them.
		return v.RefuseAttachments(o)
	}
	return ""
}

// prepare reads the instrument's rules (and for a close the position or
// balance), rounds the order and checks the minimum, and sets the
// leverage, returning the order to send or why it is refused.
func (v *Venue) prepare(ctx context.Context, o exchange.Order, symbol string) (Filters, outgoing, string, error) {
	f, found, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return f, outgoing{}, "", err
	}
	if !found {
		return f, outgoing{}, ReasonUnknownSymbol + ": " + symbol, nil
	}
	if f.State != "" && f.State != "live" {
		return f, outgoing{}, ReasonNotTrading + ": " + f.State, nil
	}
	out := outgoing{instID: f.InstID, side: o.Side, market: o.OrderType == "market", qty: o.Quantity,
		reduceOnly: o.ReduceOnly && v.swap(), clientID: o.ClientOrderID}
	if v.swap() {
		hedge, err := v.hedgeMode(ctx)
		if err != nil {
			return f, out, "", err
		}
		if hedge {
			return f, out, ReasonHedgeMode, nil
		}
	}
	if exchange.IsClose(o.Action) {
		var reason string
		if out, reason, err = v.resolveClose(ctx, o, f, out); err != nil || reason != "" {
			return f, out, reason, err
		}
	}
	out.qty = venuekit.FloorTo(out.qty, f.Step)
	if !out.qty.IsPositive() || out.qty.LessThan(f.MinQty) {
		return f, out, fmt.Sprintf("quantity %s is below the minimum %s for %s (minSz, after rounding down to the lot size %s)",
			out.qty, f.MinQty, f.InstID, f.Step), nil
	}
	if !out.market {
		out.price = venuekit.RoundPrice(o.Price.Decimal, f.TickSize, out.side)
	}
	var reason string
	if out.tp, out.sl, reason = venuekit.AttachedPrices(o, out.side, f.TickSize); reason != "" {
		return f, out, reason, nil
	}
	// Judged on what is sent (out.qty, rounded to the lot): a sell of
	// 0.0105 sent as 0.010 against a long of 0.010 only closes it.
	sent := o
	sent.Quantity = out.qty
	if v.swap() && venuekit.SetsLeverage(sent, decimal.Zero) {
		// Read only for an order that would set it: an order that only
		// reduces the position opens nothing (venuekit.SetsLeverage).
		pos, err := v.netPosition(ctx, f.InstID)
		if err != nil {
			return f, out, "", err
		}
		if venuekit.SetsLeverage(sent, f.fromWire(pos)) {
			if reason, err := v.ensureLeverage(ctx, f.InstID, o.Leverage); err != nil || reason != "" {
				return f, out, reason, err
			}
		}
	}
	return f, out, "", nil
}

// orderBody is POST /api/v5/trade/order's body.
type orderBody struct {
	InstID     string `json:"instId"`
	TdMode     string `json:"tdMode"`
	ClOrdID    string `json:"clOrdId"`
	Side       string `json:"side"`
	OrdType    string `json:"ordType"`
	Sz         string `json:"sz"`
	Px         string `json:"px,omitempty"`
	TgtCcy     string `json:"tgtCcy,omitempty"`
	BanAmend   bool   `json:"banAmend,omitempty"`
	ReduceOnly bool   `json:"reduceOnly,omitempty"`
	// AttachAlgoOrds carries the entry's take-profit and stop-loss
	// (Post_Place_Order.md): one element, each trigger with order price
	// -1 ("executed at the market price"), triggered by the last price.
	AttachAlgoOrds []attachAlgoOrd `json:"attachAlgoOrds,omitempty"`
}

// attachAlgoOrd is one TP/SL attached to an order, as OKX takes it and
// lists it back (Get_Order_Details.md).
type attachAlgoOrd struct {
	// AttachAlgoClOrdID names the TP/SL algo order OKX generates once the
	// order filled ("It will be posted to algoClOrdId",
	// Post_Place_Order.md): hoox sends AttachedAlgoID of the entry, so a
	// close can tell hoox's generated exits from the trader's.
	AttachAlgoClOrdID string `json:"attachAlgoClOrdId,omitempty"`
	TpTriggerPx       string `json:"tpTriggerPx,omitempty"`
	TpOrdPx           string `json:"tpOrdPx,omitempty"`
	TpTriggerPxType   string `json:"tpTriggerPxType,omitempty"`
	SlTriggerPx       string `json:"slTriggerPx,omitempty"`
	SlOrdPx           string `json:"slOrdPx,omitempty"`
	SlTriggerPxType   string `json:"slTriggerPxType,omitempty"`
	FailCode          string `json:"failCode,omitempty"`
}

// send places out, stamped stamp, and maps the answer. OKX's answer holds
// only ordId and sCode; the order's state needs a query (confirm).
func (v *Venue) send(ctx context.Context, f Filters, out outgoing, stamp time.Time) (exchange.Report, error) {
	body := orderBody{InstID: out.instID, TdMode: "cash", ClOrdID: out.clientID, Side: out.side,
		OrdType: "limit", Sz: f.toWire(out.qty).String(), ReduceOnly: out.reduceOnly}
	if v.swap() {
		body.TdMode = "cross"
	}
	if out.market {
		body.OrdType = "market"
		if !v.swap() {
			// A spot market buy's sz is in the quote currency unless told
			// otherwise; hoox's quantity is the base currency. With
			// base_ccy, OKX fills a buy the funds cannot cover "according
			// to your maximum buyable … quantity" unless banAmend is true
			// ("system will not amend and reject the market order if user
			// does not have sufficient funds", Post_Place_Order.md): a
			// size the signal never asked for, so hoox bans it and the
			// order is refused (51008) as at Binance and Bybit.
			body.TgtCcy, body.BanAmend = "base_ccy", true
		}
	} else {
		body.Px = out.price.String()
	}
	if out.tp.Valid || out.sl.Valid {
		a := attachAlgoOrd{AttachAlgoClOrdID: AttachedAlgoID(out.clientID)}
		if out.tp.Valid {
			a.TpTriggerPx, a.TpOrdPx, a.TpTriggerPxType = out.tp.Decimal.String(), "-1", "last"
		}
		if out.sl.Valid {
			a.SlTriggerPx, a.SlOrdPx, a.SlTriggerPxType = out.sl.Decimal.String(), "-1", "last"
		}
		body.AttachAlgoOrds = []attachAlgoOrd{a}
	}
	var ack []struct {
		OrdID   string `json:"ordId"`
		ClOrdID string `json:"clOrdId"`
		SCode   string `json:"sCode"`
	}
	err := v.do(ctx, request{method: http.MethodPost, path: "/api/v5/trade/order", body: body, private: true, placement: true, stamp: stamp, instID: out.instID}, &ack)
	if e, ok := errors.AsType[*APIError](err); ok && e.Refused() {
		if e.Class == ClassFilter {
			v.dropFilters(compact(out.instID))
		}
		r := rejected(e.Msg)
		r.Symbol, r.Side, r.Quantity = out.instID, out.side, out.qty
		r.TakeProfit, r.StopLoss = out.tp, out.sl
		return r, nil
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: place order %s: %w", out.clientID, err)
	}
	if len(ack) == 0 || ack[0].OrdID == "" {
		return exchange.Report{}, fmt.Errorf("okx: place order %s: answer without an order id: %w", out.clientID, exchange.ErrUnknownOutcome)
	}
	return v.confirm(ctx, f, out, ack[0].OrdID)
}

// confirm learns the state of an order OKX accepted: a limit order is
// reported as soon as it is seen, a market order once final. When that
// cannot be learnt within ConfirmWait the answer wraps ErrUnknownOutcome
// (never ErrUnreachable: the order exists) and the gateway's reconcile
// follows it with Lookup.
func (v *Venue) confirm(ctx context.Context, f Filters, out outgoing, ordID string) (exchange.Report, error) {
	var last error
	var final exchange.Report
	try := func() bool {
		r, _, err := v.query(ctx, f, url.Values{"instId": {out.instID}, "ordId": {ordID}})
		switch {
		case err == nil && (!out.market || r.Status != exchange.StatusOpen):
			final = r
			return true
		case err == nil:
			last = fmt.Errorf("okx shows it %s, not yet final", r.Status)
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
	v.log.WarnContext(ctx, "okx accepted the order but its state could not be learnt; the gateway reconciles it",
		"client_order_id", out.clientID, "order_id", ordID, "error", last)
	return exchange.Report{}, fmt.Errorf("okx: place order %s: accepted as order %s, but its state is not known (%v): %w",
		out.clientID, ordID, last, exchange.ErrUnknownOutcome)
}

// orderInfo is OKX's order as GET /api/v5/trade/order returns it.
type orderInfo struct {
	InstID    string `json:"instId"`
	OrdID     string `json:"ordId"`
	ClOrdID   string `json:"clOrdId"`
	Px        string `json:"px"`
	Sz        string `json:"sz"`
	OrdType   string `json:"ordType"`
	Side      string `json:"side"`
	AccFillSz string `json:"accFillSz"`
	AvgPx     string `json:"avgPx"`
	State     string `json:"state"`
	// AttachAlgoOrds are the TP/SL attached when the order was placed.
	AttachAlgoOrds []attachAlgoOrd `json:"attachAlgoOrds"`
	// Fee is the accumulated fee (Get_Order_Details.md), negative for a
	// fee charged ("for spot, accumulated fee charged by the platform,
	// always negative"), positive for a rebate; FeeCcy is the currency
	// it is in.
	Fee    string `json:"fee"`
	FeeCcy string `json:"feeCcy"`
}

// attached returns the take-profit and stop-loss trigger prices oi was
// placed with (invalid: none).
func (oi orderInfo) attached() (tp, sl decimal.NullDecimal) {
	for _, a := range oi.AttachAlgoOrds {
		if p := venuekit.Dec(a.TpTriggerPx); p.IsPositive() {
			tp = decimal.NewNullDecimal(p)
		}
		if p := venuekit.Dec(a.SlTriggerPx); p.IsPositive() {
			sl = decimal.NewNullDecimal(p)
		}
	}
	return tp, sl
}

// query reads one order (by ordId or clOrdId) and maps it; oi is the
// order as OKX listed it.
func (v *Venue) query(ctx context.Context, f Filters, q url.Values) (exchange.Report, orderInfo, error) {
	var res []orderInfo
	if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/trade/order", query: q, private: true}, &res); err != nil {
		return exchange.Report{}, orderInfo{}, err
	}
	if len(res) == 0 {
		return exchange.Report{}, orderInfo{}, exchange.ErrNotFound
	}
	return report(res[0], f), res[0], nil
}

// report maps OKX's order: live and partially_filled are open, filled is
// filled. A limit order canceled (or mmp_canceled) is cancelled, with what
// filled before in FilledQuantity: the follow job records how a resting
// order ended (OKX has no expired state; Get_Order_Details.md). A market
// order canceled is filled when anything executed (cut short) and
// rejected otherwise. A state OKX may add later counts as open: not final,
// so the gateway keeps asking. OKX's fee is negative when charged; Fee is
// the amount charged (positive), in feeCcy.
func report(oi orderInfo, f Filters) exchange.Report {
	filled := f.fromWire(venuekit.Dec(oi.AccFillSz))
	r := exchange.Report{ExchangeOrderID: oi.OrdID, Symbol: oi.InstID, Side: oi.Side,
		Quantity: f.fromWire(venuekit.Dec(oi.Sz)), FilledQuantity: filled, Status: exchange.StatusOpen}
	limit := oi.OrdType == "limit"
	if limit {
		r.Price = decimal.NewNullDecimal(venuekit.Dec(oi.Px))
	}
	fill := decimal.NewNullDecimal(venuekit.Dec(oi.AvgPx))
	// The exits are held while the order may still fill completely, and
	// after it did; Post_Place_Order.md: "TP/SL algo order will be
	// generated only when this order is filled fully, or there is no TP/SL
	// algo order generated" — an order cancelled after a partial fill
	// leaves its position without them, and the report says so by
	// carrying none.
	tp, sl := oi.attached()
	if filled.IsPositive() && fill.Decimal.IsPositive() {
		r.AvgPrice = fill
	}
	if fee := venuekit.Dec(oi.Fee); !fee.IsZero() && oi.FeeCcy != "" {
		// A Report's fee is what was charged: OKX's sign flipped.
		r.Fee, r.FeeAsset = fee.Neg(), oi.FeeCcy
	}
	switch oi.State {
	case "filled":
		r.Status, r.FillPrice = exchange.StatusFilled, fill
	case "canceled", "mmp_canceled":
		tp, sl = decimal.NullDecimal{}, decimal.NullDecimal{}
		if limit {
			r.Status = exchange.StatusCancelled
			break
		}
		if filled.IsPositive() {
			r.Status, r.FillPrice = exchange.StatusFilled, fill
			break
		}
		r.Status, r.Reason = exchange.StatusRejected, "okx order "+strings.ReplaceAll(oi.State, "_", " ")+" with nothing filled"
	}
	for _, a := range oi.AttachAlgoOrds {
		if a.FailCode != "" && a.FailCode != "0" {
			// OKX failed to place the TP/SL (failCode, failReason).
			tp, sl = decimal.NullDecimal{}, decimal.NullDecimal{}
		}
	}
	r.TakeProfit, r.StopLoss = tp, sl
	return r
}

// Lookup finds the latest order OKX holds under o.ClientOrderID on o's
// instrument; exchange.ErrNotFound when it holds none (51603). An order
// that differs from o in instrument, side or quantity (as o would be sent,
// rounded to the lot size) wraps exchange.ErrMismatch.
func (v *Venue) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop {
		return v.lookupTrailing(ctx, o)
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	f, found, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: look up order %s: %w", o.ClientOrderID, err)
	}
	if !found {
		// No order can exist on an instrument OKX does not list.
		return exchange.Report{}, fmt.Errorf("okx: look up order %s: unknown symbol %s: %w", o.ClientOrderID, symbol, exchange.ErrNotFound)
	}
	r, _, err := v.query(ctx, f, url.Values{"instId": {f.InstID}, "clOrdId": {o.ClientOrderID}})
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: look up order %s: %w", o.ClientOrderID, err)
	}
	if err := exchange.Matches(o, f.InstID, venuekit.FloorTo(o.Quantity, f.Step), r); err != nil {
		return exchange.Report{}, fmt.Errorf("okx: %w", err)
	}
	// A close hoox finds filled here (its answer was lost, or it is the
	// reconcile's, the sweeper's or a split close's part) closed the
	// position as Place's own answer would have said: its exits go as
	// they would have there when the position is flat. Not flat, Place
	// kept the exits created after its stamp (before its position read);
	// the order's cTime is after that read, so an exit of an entry that
	// filled in between would be taken for the closed position's: with no
	// bound known here, nothing is cancelled.
	r = v.closedExits(ctx, o, r, f, r.Side, time.Time{})
	// The attached take-profit and stop-loss are not compared with o's:
	// OKX lets the trader move or delete them on a pending order (amend-
	// order's newTpTriggerPx/newSlTriggerPx, or the app), and the order is
	// still this signal's (its hoox-made clOrdId, instrument, side and
	// size say so; the claim's fingerprint guards a reused key). The
	// report carries the exits OKX holds, so the record shows them.
	return r, nil
}

func rejected(reason string) exchange.Report { return venuekit.Rejected(reason) }
