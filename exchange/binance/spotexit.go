package binance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// A lone spot exit — a take-profit without a stop-loss, a stop-loss
// without a take-profit, or a trailing stop on its own — is one plain
// order on POST /api/v3/order (rest-api.md, "New order"), placed under the
// leg's client order ID once the entry filled:
//
//   - take_profit: LIMIT_MAKER at the take-profit price, the OCO's above
//     order on its own: it rests on the book and sells at the target or
//     better, as a maker; a TAKE_PROFIT (a market order once the price
//     reaches stopPrice) could sell below the target in a fast market.
//   - stop_loss: STOP_LOSS at stopPrice, a MARKET order once triggered (a
//     stop that must get out, as the OCO's below order).
//   - trailing_stop: STOP_LOSS with trailingDelta (BIPS) and no stopPrice,
//     so it trails from the next trade (faqs/trailing-stop-faq.md).
var spotExitTypes = map[string]string{exchange.RoleTakeProfit: "LIMIT_MAKER", exchange.RoleStopLoss: "STOP_LOSS",
	exchange.RoleTrailingStop: "STOP_LOSS"}

// spotExit is a lone spot exit as it goes on the wire.
type spotExit struct {
	symbol, typ string
	qty         decimal.Decimal
	price       decimal.Decimal // LIMIT_MAKER
	stopPrice   decimal.Decimal // STOP_LOSS with a price
	delta       int64           // trailingDelta, BIPS
}

// trailingBIPS is a trailing stop's percent as Binance spot's
// trailingDelta: 1 BIPS = 0.01 %, rounded down (a tighter stop, the way
// every exit rounds); zero when a is not a percent.
func trailingBIPS(a *exchange.Attached) int64 {
	if a == nil || !a.Percent.Valid {
		return 0
	}
	return a.Percent.Decimal.Mul(decimal.NewFromInt(100)).Floor().IntPart()
}

// spotExitOrder builds what placeSpotExit sends for the exit o: the
// quantity rounded down to LOT_SIZE's step, the target as resolved (on
// the tick already). reason says why the symbol's rules refuse it before
// anything is sent (orderTypes, allowTrailingStop, TRAILING_DELTA,
// LOT_SIZE, PRICE_FILTER, NOTIONAL); errBadExit for an exit without a
// target hoox can send.
func (v *Venue) spotExitOrder(ctx context.Context, o exchange.Order) (e spotExit, reason string, err error) {
	if e, err = spotExitTarget(o); err != nil {
		return e, "", err
	}
	f, _, err := v.filtersFor(ctx, e.symbol)
	if err != nil {
		return e, "", err
	}
	e.qty = f.RoundQuantity(o.Quantity, false)
	return e, f.checkSpotExit(e, o.Side), nil
}

// spotExitTarget is the lone spot exit o as it goes on the wire but for
// its quantity, which the symbol's filters round: its symbol, type and
// target. errBadExit for an exit without a target hoox can send.
func spotExitTarget(o exchange.Order) (e spotExit, err error) {
	e.symbol = exchange.VenueSymbol(o.Symbol)
	typ, ok := spotExitTypes[o.Exit]
	target := o.ExitTarget()
	switch {
	case !ok || target == nil:
		return e, fmt.Errorf("%w: exit %q of %s has no target", errBadExit, o.Exit, o.ClientOrderID)
	case o.Exit == exchange.RoleTrailingStop:
		if e.delta = trailingBIPS(target); e.delta < 1 {
			return e, fmt.Errorf("%w: %s", errBadExit, ReasonSpotTrailing)
		}
	case !target.Price.Valid:
		return e, fmt.Errorf("%w: exit %q of %s has no trigger price", errBadExit, o.Exit, o.ClientOrderID)
	case typ == "LIMIT_MAKER":
		e.price = target.Price.Decimal
	default:
		e.stopPrice = target.Price.Decimal
	}
	e.typ = typ
	return e, nil
}

var _ exchange.ExitChecker = (*Venue)(nil)

// CheckExits reads the symbol's rules (exchangeInfo, cached: the entry
// needs them anyway) and says which of o's exits spot would refuse after
// the entry filled: an OCO (a take-profit with a stop-loss or trailing
// stop) needs ocoAllowed and both LIMIT_MAKER and STOP_LOSS in
// orderTypes, a lone take-profit LIMIT_MAKER, a lone stop-loss STOP_LOSS,
// a trailing stop STOP_LOSS, allowTrailingStop and a trailingDelta within
// TRAILING_DELTA. The leg checks them again when it
// is sent (the rules may change in between). USDⓈ-M: nothing to read
// (its ranges are fixed, RefuseAttachments).
func (v *Venue) CheckExits(ctx context.Context, o exchange.Order) (string, error) {
	if v.futures() || !o.HasAttachments() {
		return "", nil
	}
	f, _, err := v.filtersFor(ctx, exchange.VenueSymbol(o.Symbol))
	if err != nil {
		if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Refused() {
			return apiErr.Msg, nil
		}
		return "", err
	}
	side := "sell"
	if o.Side == "sell" {
		side = "buy"
	}
	if o.TakeProfit != nil && (o.StopLoss != nil || o.TrailingStop != nil) {
		if f.OCORefused {
			return fmt.Sprintf("binance takes no OCO order lists on %s (ocoAllowed), which a take_profit with a stop needs", f.Symbol), nil
		}
		for _, typ := range []string{"LIMIT_MAKER", "STOP_LOSS"} {
			if f.OrderTypes != nil && !slices.Contains(f.OrderTypes, typ) {
				return fmt.Sprintf("binance lists no %s orders for %s (orderTypes)", typ, f.Symbol), nil
			}
		}
		if o.TrailingStop != nil {
			return f.checkTrailing(trailingBIPS(o.TrailingStop), side), nil
		}
		return "", nil
	}
	for _, r := range o.Attachments() {
		typ := spotExitTypes[r.Role]
		if f.OrderTypes != nil && !slices.Contains(f.OrderTypes, typ) {
			return fmt.Sprintf("binance lists no %s orders for %s (orderTypes), which a lone %s needs", typ, f.Symbol, r.Role), nil
		}
		if r.Role == exchange.RoleTrailingStop {
			if reason := f.checkTrailing(trailingBIPS(r.Attached), side); reason != "" {
				return reason, nil
			}
		}
	}
	return "", nil
}

// checkSpotExit returns why the symbol's rules refuse e, a sell (or buy)
// exit, or "".
func (f Filters) checkSpotExit(e spotExit, side string) string {
	if f.OrderTypes != nil && !slices.Contains(f.OrderTypes, e.typ) {
		return fmt.Sprintf("binance lists no %s orders for %s (orderTypes)", e.typ, f.Symbol)
	}
	if reason := f.checkQuantity(e.qty, false); reason != "" {
		return reason
	}
	if e.delta > 0 {
		return f.checkTrailing(e.delta, side)
	}
	trigger := e.price
	if e.typ != "LIMIT_MAKER" {
		trigger = e.stopPrice
	}
	if reason := f.checkPrice(trigger); reason != "" {
		return reason
	}
	// A LIMIT_MAKER is priced; a STOP_LOSS executes as a MARKET order.
	return f.checkNotional(e.qty, trigger, e.typ != "LIMIT_MAKER")
}

// checkTrailing returns why a STOP_LOSS on side trailing by delta BIPS
// breaks the symbol's allowTrailingStop or TRAILING_DELTA (a SELL stop
// triggers below the market: the "below" bounds), or "".
func (f Filters) checkTrailing(delta int64, side string) string {
	lo, hi := f.MinTrailingBelow, f.MaxTrailingBelow
	if side == "buy" {
		lo, hi = f.MinTrailingAbove, f.MaxTrailingAbove
	}
	switch {
	case !f.AllowTrailingStop:
		return fmt.Sprintf("binance takes no trailing stops on %s (allowTrailingStop)", f.Symbol)
	case (lo > 0 && delta < lo) || (hi > 0 && delta > hi):
		return fmt.Sprintf("trailing stop of %d BIPS (%s %%) is outside %s's TRAILING_DELTA range %d to %d BIPS",
			delta, decimal.New(delta, -2), f.Symbol, lo, hi)
	}
	return ""
}

// placeSpotExit sends the lone spot exit o as one order (spotExitTypes)
// under its client order ID, answered RESULT (conditional orders default
// to ACK, which carries no status).
func (v *Venue) placeSpotExit(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	start := v.cfg.Now()
	if !clientOrderIDPattern.MatchString(o.ClientOrderID) {
		return rejected(ReasonClientOrderID), nil
	}
	stamp, err := v.serverTimeAt(ctx, start)
	if err != nil {
		return exchange.Report{}, err
	}
	ctx = v.withOrderExpiry(ctx, stamp)
	e, reason, err := v.spotExitOrder(ctx, o)
	if errors.Is(err, errBadExit) {
		return rejected(err.Error()), nil
	}
	if r, err, done := refusal(err); done {
		return r, err
	}
	if reason != "" {
		return rejected(reason), nil
	}
	p := params{}.add("symbol", e.symbol).add("side", strings.ToUpper(o.Side)).add("type", e.typ).add("quantity", e.qty.String())
	switch {
	case e.typ == "LIMIT_MAKER":
		p = p.add("price", e.price.String())
	case e.delta > 0:
		p = p.add("trailingDelta", strconv.FormatInt(e.delta, 10))
	default:
		p = p.add("stopPrice", e.stopPrice.String())
	}
	p = p.add("newClientOrderId", o.ClientOrderID).add("newOrderRespType", "RESULT")
	var a orderAnswer
	req := request{method: http.MethodPost, path: v.prefix + "/order", params: p, signed: true, weight: 1, placement: true, stamp: stamp}
	if err := v.do(ctx, req, &a); err != nil {
		if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassFilter {
			// The cached filters may be stale: the next order reads them.
			v.dropFilters(e.symbol)
		}
		if r, err, done := refusal(fmt.Errorf("binance: place exit %s: %w", o.ClientOrderID, err)); done {
			return r, err
		}
	}
	if a.OrderID == 0 || a.Status == "" {
		return exchange.Report{}, fmt.Errorf("binance: place exit %s: answer without order status: %w", o.ClientOrderID, exchange.ErrUnknownOutcome)
	}
	return a.exitReport(o), nil
}

// exitReport maps a lone spot exit's order onto a Report: resting (NEW,
// PARTIALLY_FILLED, or anything new) is open — Binance holds the exit —
// FILLED is filled, CANCELED cancelled and EXPIRED expired whatever
// executed before (FilledQuantity says it), REJECTED rejected. The target
// is reported from the answer (price, stopPrice, trailingDelta), or from
// o, the only order hoox sends under the ID, where the answer has none.
func (a orderAnswer) exitReport(o exchange.Order) exchange.Report {
	r := exchange.Report{ExchangeOrderID: strconv.FormatInt(a.OrderID, 10), Symbol: a.Symbol,
		Side: strings.ToLower(a.Side), Quantity: a.OrigQty, FilledQuantity: a.ExecutedQty}
	if p := a.fillPrice(); a.ExecutedQty.IsPositive() && p.IsPositive() {
		r.AvgPrice = decimal.NewNullDecimal(p)
	}
	switch a.Status {
	case "FILLED":
		r.Status, r.FillPrice = exchange.StatusFilled, r.AvgPrice
	case "CANCELED":
		r.Status = exchange.StatusCancelled
	case "EXPIRED", "EXPIRED_IN_MATCH":
		r.Status = exchange.StatusExpired
	case "REJECTED":
		r.Status, r.Reason = exchange.StatusRejected, "binance rejected the exit order"
	default:
		r.Status = exchange.StatusOpen
	}
	target := o.ExitTarget()
	switch o.Exit {
	case exchange.RoleTrailingStop:
		delta := a.TrailingDelta
		if delta == 0 {
			delta = trailingBIPS(target)
		}
		r.CallbackRate = decimal.NewNullDecimal(decimal.New(delta, -2))
	case exchange.RoleTakeProfit:
		r.TakeProfit = decimal.NewNullDecimal(a.Price)
		if !a.Price.IsPositive() && target != nil {
			r.TakeProfit = target.Price
		}
	default:
		r.StopLoss = decimal.NewNullDecimal(a.StopPrice)
		if !a.StopPrice.IsPositive() && target != nil {
			r.StopLoss = target.Price
		}
	}
	return r
}

// lookupSpotExit finds the lone spot exit o by its client order ID (GET
// /api/v3/order with origClientOrderId, weight 4); exchange.ErrNotFound
// when Binance holds none (-2013). An order under the ID for another
// symbol, side, type, quantity or target is an ErrMismatch: not adopted.
// The quantity is the leg's as it was sent (sentQuantity), not as today's
// LOT_SIZE step would round it: an exit rests while Binance changes the
// step.
func (v *Venue) lookupSpotExit(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	e, err := spotExitTarget(o)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up exit %s: %w", o.ClientOrderID, err)
	}
	var a orderAnswer
	err = v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/order",
		params: params{}.add("symbol", e.symbol).add("origClientOrderId", o.ClientOrderID), signed: true, weight: 4}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassNotFound {
		return exchange.Report{}, fmt.Errorf("binance: look up exit %s: %w: %w", o.ClientOrderID, exchange.ErrNotFound, err)
	}
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassArchived {
		// Cancelled or expired with nothing executed, long ago (-2026).
		return exchange.Report{Symbol: e.symbol, Side: o.Side, Quantity: o.Quantity, Status: exchange.StatusCancelled,
			Reason: "binance archived the order: " + apiErr.Msg}, nil
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up exit %s: %w", o.ClientOrderID, err)
	}
	if e.qty, err = v.sentQuantity(ctx, e.symbol, o.Quantity, a.OrigQty, false); err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up exit %s: %w", o.ClientOrderID, err)
	}
	held := fmt.Sprintf("%s %s %s %s price %s stop %s delta %d", a.Symbol, strings.ToLower(a.Side), a.Type, a.OrigQty, a.Price, a.StopPrice, a.TrailingDelta)
	want := fmt.Sprintf("%s %s %s %s price %s stop %s delta %d", e.symbol, o.Side, e.typ, e.qty, e.price, e.stopPrice, e.delta)
	same := a.Symbol == e.symbol && strings.EqualFold(a.Side, o.Side) && a.Type == e.typ && a.OrigQty.Equal(e.qty) &&
		a.Price.Equal(e.price) && a.StopPrice.Equal(e.stopPrice) && a.TrailingDelta == e.delta
	if !same {
		return exchange.Report{}, fmt.Errorf("binance: %w: client order id %s is held as %s, not %s", exchange.ErrMismatch, o.ClientOrderID, held, want)
	}
	return a.exitReport(o), nil
}

// cancelSpotExit cancels the lone spot exit o (DELETE /api/v3/order by
// origClientOrderId, rest-api.md "Cancel order"); an exit no longer
// resting is refused -2011 and looked up instead, so a retry is
// idempotent.
func (v *Venue) cancelSpotExit(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	symbol := exchange.VenueSymbol(o.Symbol)
	var a orderAnswer
	err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/order",
		params: params{}.add("symbol", symbol).add("origClientOrderId", o.ClientOrderID), signed: true, weight: 1}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && (apiErr.Code == -2011 || apiErr.Class == ClassNotFound) {
		return v.lookupSpotExit(ctx, o)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: cancel exit %s: %w", o.ClientOrderID, err)
	}
	return a.exitReport(o), nil
}
