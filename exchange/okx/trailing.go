package okx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// An OKX trailing stop is an algo order of ordType move_order_stop (POST
// /api/v5/trade/order-algo, OKX/Order_Book_Trading/Algo_Trading/
// Post_Place_Algo_Order.md in the stored mirror), not an attachAlgoOrds
// element: hoox places it as a leg after the entry filled, a reduce-only
// close of what the entry bought or sold, trailing by callbackRatio (the
// signal's percent / 100: "0.05" is 5 %) or callbackSpread (its price
// distance, rounded down to the tick), named by algoClOrdId (the leg's
// client order ID), found again by GET /api/v5/trade/order-algo?algoClOrdId=
// (Get_Algo_Order_Details.md) and cancelled by algoId (POST
// /api/v5/trade/cancel-algos, Post_Cancel_Algo_Order.md). activePx is not
// sent: the stop trails from the moment it is placed, as Binance's does.
var (
	_ exchange.TrailingLegAttacher = (*Venue)(nil)
	_ exchange.OrderLateRefuser    = (*Venue)(nil)
)

// Paths of OKX's algo order endpoints.
const (
	pathAlgo       = "/api/v5/trade/order-algo"
	pathCancelAlgo = "/api/v5/trade/cancel-algos"
)

// Reasons the adapter refuses a trailing stop before anything is claimed.
const (
	ReasonTrailingSpot = "trailing_stop is supported on okx-swap only: on okx spot the stop would have to sell the coins the entry received net of its fee, which hoox does not place yet; send the entry without it"
)

// TrailsAsLeg is true: a trailing stop is its own algo order; the
// take-profit and stop-loss stay on the entry (attachAlgoOrds).
func (v *Venue) TrailsAsLeg() bool { return true }

// RefusesLateRequest is false for a trailing stop: expTime, which proves a
// late request was never processed, covers "Place order", "Place multiple
// orders" and the amend endpoints only (Transaction_Timeouts/Rest_Api.md),
// not the algo order endpoint. A trailing stop not found after its window
// is therefore never sent again (the leg ends failed, for an operator).
func (v *Venue) RefusesLateRequest(o exchange.Order) bool { return o.Exit != exchange.RoleTrailingStop }

// trailingRefusal says why the trailing stop a cannot be placed on this
// market, or "".
func (v *Venue) trailingRefusal(a *exchange.Attached) string {
	switch {
	case !v.swap():
		return ReasonTrailingSpot
	case a == nil || (!a.Percent.Valid && !a.Distance.Valid):
		return "trailing_stop needs a percent or a distance"
	case a.Percent.Valid && (!a.Percent.Decimal.IsPositive() || a.Percent.Decimal.GreaterThanOrEqual(decimal.NewFromInt(100))):
		return fmt.Sprintf("trailing_stop percent %s is outside 0 to 100", a.Percent.Decimal)
	case !a.Percent.Valid && !a.Distance.Decimal.IsPositive():
		return fmt.Sprintf("trailing_stop distance %s is not positive", a.Distance.Decimal)
	}
	return ""
}

// callback is what OKX trails the stop a by: callbackRatio (the percent /
// 100) for a percent target — the percent is what the signal asked, even
// after the leg runner worked out its distance from the fill — else
// callbackSpread, the distance rounded down to the tick (a tighter stop,
// as every exit rounds). reason is set when the distance is below a tick.
func callback(a *exchange.Attached, tick decimal.Decimal) (ratio, spread decimal.Decimal, reason string) {
	if a.Percent.Valid {
		return a.Percent.Decimal.Shift(-2), spread, ""
	}
	spread = a.Distance.Decimal
	if tick.IsPositive() {
		spread = spread.Div(tick).Floor().Mul(tick)
	}
	if !spread.IsPositive() {
		return ratio, spread, fmt.Sprintf("trailing_stop distance %s is less than the tick %s", a.Distance.Decimal, tick)
	}
	return ratio, spread, ""
}

// withCallback reports the rate (percent) or distance OKX trails by for ratio and
// spread, as a Report carries them.
func withCallback(r *exchange.Report, ratio, spread decimal.Decimal) {
	if ratio.IsPositive() {
		r.CallbackRate = decimal.NewNullDecimal(ratio.Shift(2))
	}
	if spread.IsPositive() {
		r.TrailingDistance = decimal.NewNullDecimal(spread)
	}
}

// algoPlaceBody is POST /api/v5/trade/order-algo's body for a trailing
// stop.
type algoPlaceBody struct {
	InstID         string `json:"instId"`
	TdMode         string `json:"tdMode"`
	Side           string `json:"side"`
	OrdType        string `json:"ordType"`
	Sz             string `json:"sz"`
	AlgoClOrdID    string `json:"algoClOrdId"`
	ReduceOnly     bool   `json:"reduceOnly"`
	CallbackRatio  string `json:"callbackRatio,omitempty"`
	CallbackSpread string `json:"callbackSpread,omitempty"`
}

// algoInfo is an algo order as Get_Algo_Order_Details.md lists it.
type algoInfo struct {
	InstID         string `json:"instId"`
	AlgoID         string `json:"algoId"`
	AlgoClOrdID    string `json:"algoClOrdId"`
	OrdType        string `json:"ordType"`
	Side           string `json:"side"`
	Sz             string `json:"sz"`
	State          string `json:"state"`
	CallbackRatio  string `json:"callbackRatio"`
	CallbackSpread string `json:"callbackSpread"`
	FailCode       string `json:"failCode"`
}

// report maps an algo order: live (and pause, partially_effective) is
// open — OKX holds the stop; effective (triggered: its order was sent) is
// filled as far as hoox follows it; canceled is cancelled; order_failed
// is rejected. A state OKX may add later counts as open.
func (a algoInfo) report(f Filters) exchange.Report {
	r := exchange.Report{ExchangeOrderID: a.AlgoID, Symbol: a.InstID, Side: a.Side,
		Quantity: f.fromWire(venuekit.Dec(a.Sz)), Status: exchange.StatusOpen}
	switch a.State {
	case "effective":
		r.Status = exchange.StatusFilled
	case "canceled":
		r.Status = exchange.StatusCancelled
	case "order_failed":
		r.Status, r.Reason = exchange.StatusRejected, "okx trailing stop failed (failCode "+a.FailCode+")"
	}
	withCallback(&r, venuekit.Dec(a.CallbackRatio), venuekit.Dec(a.CallbackSpread))
	return r
}

// trailingOrder is what placeTrailing sends for o (reason set when it
// cannot be sent).
func (v *Venue) trailingOrder(ctx context.Context, o exchange.Order) (t trailing, reason string, err error) {
	if !clOrdIDPattern.MatchString(o.ClientOrderID) {
		return t, ReasonClientOrderID, nil
	}
	if r := v.trailingRefusal(o.TrailingStop); r != "" {
		return t, r, nil
	}
	symbol := exchange.VenueSymbol(o.Symbol)
	f, found, err := v.filtersFor(ctx, symbol)
	switch {
	case err != nil:
		return t, "", err
	case !found:
		return t, ReasonUnknownSymbol + ": " + symbol, nil
	}
	t.f, t.qty = f, venuekit.FloorTo(o.Quantity, f.Step)
	if !t.qty.IsPositive() || t.qty.LessThan(f.MinQty) {
		return t, fmt.Sprintf("trailing stop quantity %s is below the minimum %s for %s", t.qty, f.MinQty, f.InstID), nil
	}
	t.ratio, t.spread, reason = callback(o.TrailingStop, f.TickSize)
	return t, reason, nil
}

// trailing is a trailing stop as it goes on the wire: its instrument's
// rules, its size rounded down to the lot (base currency), and the ratio
// or the spread it trails by (the other zero).
type trailing struct {
	f             Filters
	qty           decimal.Decimal
	ratio, spread decimal.Decimal
}

// placeTrailing sends the trailing stop o (Exit RoleTrailingStop) as a
// reduce-only move_order_stop algo order under algoClOrdId o.ClientOrderID.
// OKX's answer holds only algoId and sCode: the stop is reported open
// (OKX holds it) with the rate it trails by.
func (v *Venue) placeTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	t, reason, err := v.trailingOrder(ctx, o)
	if err != nil {
		if e, ok := errors.AsType[*APIError](err); ok && e.Refused() {
			return rejected(e.Msg), nil
		}
		return exchange.Report{}, fmt.Errorf("okx: place trailing stop %s: %w", o.ClientOrderID, asUnreachable(err))
	}
	if reason != "" {
		return rejected(reason), nil
	}
	f, qty := t.f, t.qty
	body := algoPlaceBody{InstID: f.InstID, TdMode: "cross", Side: o.Side, OrdType: "move_order_stop",
		Sz: f.toWire(qty).String(), AlgoClOrdID: o.ClientOrderID, ReduceOnly: true}
	if t.ratio.IsPositive() {
		body.CallbackRatio = t.ratio.String()
	} else {
		body.CallbackSpread = t.spread.String()
	}
	var ack []struct {
		AlgoID      string `json:"algoId"`
		AlgoClOrdID string `json:"algoClOrdId"`
		SCode       string `json:"sCode"`
	}
	// A placement (a lost answer means the stop may exist) without
	// expTime, which the algo endpoint does not take.
	err = v.do(ctx, request{method: http.MethodPost, path: pathAlgo, body: body, private: true, placement: true, instID: f.InstID}, &ack)
	if e, ok := errors.AsType[*APIError](err); ok && e.Refused() {
		r := rejected(e.Msg)
		r.Symbol, r.Side, r.Quantity = f.InstID, o.Side, qty
		withCallback(&r, t.ratio, t.spread)
		return r, nil
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: place trailing stop %s: %w", o.ClientOrderID, err)
	}
	if len(ack) == 0 || ack[0].AlgoID == "" {
		return exchange.Report{}, fmt.Errorf("okx: place trailing stop %s: answer without an algo id: %w", o.ClientOrderID, exchange.ErrUnknownOutcome)
	}
	r := exchange.Report{ExchangeOrderID: ack[0].AlgoID, Symbol: f.InstID, Side: o.Side, Quantity: qty, Status: exchange.StatusOpen}
	withCallback(&r, t.ratio, t.spread)
	return r, nil
}

// queryTrailing reads the algo order under o.ClientOrderID as OKX holds
// it; exchange.ErrNotFound when it holds none.
func (v *Venue) queryTrailing(ctx context.Context, o exchange.Order) (algoInfo, error) {
	var res []algoInfo
	err := v.do(ctx, request{method: http.MethodGet, path: pathAlgo, query: url.Values{"algoClOrdId": {o.ClientOrderID}}, private: true}, &res)
	if e, ok := errors.AsType[*APIError](err); ok && e.Class == ClassNotFound {
		return algoInfo{}, fmt.Errorf("okx: look up trailing stop %s: %w: %w", o.ClientOrderID, exchange.ErrNotFound, err)
	}
	if err != nil {
		return algoInfo{}, fmt.Errorf("okx: look up trailing stop %s: %w", o.ClientOrderID, err)
	}
	if len(res) == 0 {
		return algoInfo{}, fmt.Errorf("okx: look up trailing stop %s: %w", o.ClientOrderID, exchange.ErrNotFound)
	}
	return res[0], nil
}

// lookupTrailing finds the trailing stop o by its algoClOrdId. One held
// for another instrument, side, size, order type, callbackRatio or
// callbackSpread than o would be sent with wraps exchange.ErrMismatch: it
// is not adopted.
func (v *Venue) lookupTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	t, reason, err := v.trailingOrder(ctx, o)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("okx: look up trailing stop %s: %w", o.ClientOrderID, err)
	}
	if reason != "" {
		return exchange.Report{}, fmt.Errorf("okx: look up trailing stop %s: %w: %s", o.ClientOrderID, exchange.ErrMismatch, reason)
	}
	a, err := v.queryTrailing(ctx, o)
	if err != nil {
		return exchange.Report{}, err
	}
	r := a.report(t.f)
	if err := exchange.Matches(exchange.Order{ClientOrderID: o.ClientOrderID, Side: o.Side, Action: "sell"}, t.f.InstID, t.qty, r); err != nil {
		return exchange.Report{}, fmt.Errorf("okx: %w", err)
	}
	if ratio, spread := venuekit.Dec(a.CallbackRatio), venuekit.Dec(a.CallbackSpread); a.OrdType != "move_order_stop" ||
		!ratio.Equal(t.ratio) || !spread.Equal(t.spread) {
		return exchange.Report{}, fmt.Errorf("okx: %w: algoClOrdId %s is held as %s with callbackRatio %q and callbackSpread %q, not move_order_stop with %s / %s",
			exchange.ErrMismatch, o.ClientOrderID, a.OrdType, a.CallbackRatio, a.CallbackSpread, t.ratio, t.spread)
	}
	return r, nil
}

// algoTriggered reports whether code refuses an algo cancel because the
// algo order triggered first: 51416 "Order has been triggered and can't
// be canceled" (Error_Code/Rest_API/Public.md); the stop is then read
// again and reported as OKX holds it. 51412 is not taken for it: OKX
// words it both "The order has been triggered and can't be canceled."
// and "Cancellation timed out, please try again later", and in the
// second case the stop is still live and not cancelled, which only an
// error (a retry) tells the trader.
func algoTriggered(code int) bool { return code == 51416 }

// cancelTrailing cancels the trailing stop o: looked up by algoClOrdId for
// its algoId (the cancel endpoint takes algoId and instId), cancelled if
// OKX still holds it live, and asked about again until it is closed (at
// most ConfirmWait). One that is no longer live — cancelled, triggered —
// is reported as it is, so a retry is idempotent; OKX's refusal of the
// cancel itself (51400, a stop that triggered as the cancel went out, a
// refusal for good) is answered by the same lookup.
func (v *Venue) cancelTrailing(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	held, err := v.lookupTrailing(ctx, o)
	if err != nil || held.Status != exchange.StatusOpen {
		return held, err
	}
	body := []map[string]string{{"algoId": held.ExchangeOrderID, "instId": held.Symbol}}
	err = v.do(ctx, request{method: http.MethodPost, path: pathCancelAlgo, body: body, private: true, instID: held.Symbol}, nil)
	if e, ok := errors.AsType[*APIError](err); err != nil && !(ok && (e.Code == 51400 || algoTriggered(e.Code) || e.Refused())) {
		return exchange.Report{}, fmt.Errorf("okx: cancel trailing stop %s: %w", o.ClientOrderID, err)
	}
	var last exchange.Report
	var lastErr error
	try := func() bool {
		last, lastErr = v.lookupTrailing(ctx, o)
		return lastErr == nil && last.Status.Final()
	}
	if !try() {
		_ = venuekit.Poll(ctx, v.cfg.ConfirmWait, try)
	}
	if lastErr != nil {
		return exchange.Report{}, fmt.Errorf("okx: cancel trailing stop %s: look up after the cancel: %w", o.ClientOrderID, lastErr)
	}
	return last, nil
}
