package binance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

var (
	_ exchange.AttachmentCapable = (*Venue)(nil)
	_ exchange.LegAttacher       = (*Venue)(nil)
)

// AttachesAsLegs is true on both markets: on spot the exits are one OCO
// order list placed after the entry filled (oco.go); on USDⓈ-M a
// take-profit and a stop-loss are separate reduce-only conditional
// orders, placed after the entry filled through the Algo Order API (trade/rest-api/New-Algo-Order.md: "Use this
// endpoint to place TP/SL"; the plain order endpoint answers -4120
// STOP_ORDER_SWITCH_ALGO for conditional types, error-code.md).
func (v *Venue) AttachesAsLegs() bool { return true }

// RefuseAttachments takes a take-profit and a stop-loss on a USDⓈ-M market
// or limit entry, a trailing stop given as a percent within Binance's
// callbackRate range (trailing.go), and both take-profit and stop-loss
// together on a spot buy (an OCO order list, see refuseSpotAttachments).
// A limit entry's exits are placed once its follow job records it filled.
// Anything else is refused before anything is sent.
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	switch {
	case !v.futures():
		return refuseSpotAttachments(o)
	case o.TrailingStop != nil && trailingRefusal(o.TrailingStop) != "":
		return trailingRefusal(o.TrailingStop)
	case exchange.IsClose(o.Action):
		return "take_profit and stop_loss belong to an entry, not a close"
	}
	return ""
}

// algoTypes maps an exit's role onto its USDⓈ-M conditional order type: a
// market order once triggered.
var algoTypes = map[string]string{exchange.RoleTakeProfit: "TAKE_PROFIT_MARKET", exchange.RoleStopLoss: "STOP_MARKET",
	exchange.RoleTrailingStop: "TRAILING_STOP_MARKET"}

// algoAnswer is the Algo Order API's order object (New-Algo-Order.md,
// Query-Algo-Order.md).
type algoAnswer struct {
	AlgoID       int64           `json:"algoId"`
	ClientAlgoID string          `json:"clientAlgoId"`
	OrderType    string          `json:"orderType"`
	Symbol       string          `json:"symbol"`
	Side         string          `json:"side"`
	Quantity     decimal.Decimal `json:"quantity"`
	AlgoStatus   string          `json:"algoStatus"`
	TriggerPrice algoDecimal     `json:"triggerPrice"`
	// CallbackRate is a trailing stop's rate in percent ("" otherwise).
	CallbackRate algoDecimal `json:"callbackRate"`
	// ActualOrderID is the order the algo order became once triggered
	// (Query-Algo-Order.md: actualOrderId, "" before); the order query
	// by orderId says what it executed.
	ActualOrderID algoID `json:"actualOrderId"`
}

// algoID reads an ID that the Algo Order API sends as a string ("" when
// there is none, as the doc's example shows) or as a number.
type algoID string

func (id *algoID) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*id = algoID(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("binance: actualOrderId %s: %w", b, err)
	}
	if n == "0" {
		n = ""
	}
	*id = algoID(n)
	return nil
}

// report maps an algo order onto a Report, by its algoStatus
// (user-data-streams/Event-Algo-Order-Update.md, "Algo Status"): NEW
// (waiting for its trigger) and TRIGGERING (forwarded to the matching
// engine) are open — the venue holds the exit; TRIGGERED (its order is in
// the matching engine) stays open until that order ended, and FINISHED
// (that order "filled or canceled") is filled — resolveTriggered asks the
// order itself (actualOrderId) what it executed; CANCELED (by hoox's
// cancel, by hand) is cancelled; EXPIRED (cancelled by the system) is
// expired; REJECTED (the matching engine refused the triggered order, a
// failed margin check) is rejected. The trigger is reported as the exit's
// price.
func (a algoAnswer) report(role string) exchange.Report {
	r := exchange.Report{ExchangeOrderID: strconv.FormatInt(a.AlgoID, 10), Symbol: a.Symbol,
		Side: strings.ToLower(a.Side), Quantity: a.Quantity}
	switch a.AlgoStatus {
	case "CANCELED":
		r.Status = exchange.StatusCancelled
	case "EXPIRED":
		r.Status = exchange.StatusExpired
	case "REJECTED":
		r.Status, r.Reason = exchange.StatusRejected, "binance algo order rejected"
	case "FINISHED":
		r.Status = exchange.StatusFilled
	default:
		// NEW, TRIGGERING, TRIGGERED and anything new: not final.
		r.Status = exchange.StatusOpen
	}
	trigger := decimal.NewNullDecimal(a.TriggerPrice.Decimal)
	switch role {
	case exchange.RoleTrailingStop:
		r.CallbackRate = decimal.NewNullDecimal(a.CallbackRate.Decimal)
	case exchange.RoleTakeProfit:
		r.TakeProfit = trigger
	default:
		r.StopLoss = trigger
	}
	return r
}

// resolveTriggered completes r, the report of a triggered algo order a
// (TRIGGERED or FINISHED), with what the order it became executed: GET
// /fapi/v1/order by orderId = actualOrderId (trade/rest-api/Query-Order.md,
// weight 1). FILLED is filled with its executed quantity and average
// price; an order still working leaves the exit open (with what filled so
// far); an order that ended with something executed is filled for that
// much (what reduced the position), one that ended with nothing executed
// is rejected with its status as the reason. FINISHED without an
// actualOrderId stays filled for the whole quantity, as the algo status
// says.
func (v *Venue) resolveTriggered(ctx context.Context, symbol string, a algoAnswer, r exchange.Report) (exchange.Report, error) {
	if (a.AlgoStatus != "TRIGGERED" && a.AlgoStatus != "FINISHED") || a.ActualOrderID == "" {
		return r, nil
	}
	var o orderAnswer
	err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/order",
		params: params{}.add("symbol", symbol).add("orderId", string(a.ActualOrderID)), signed: true, weight: 1}, &o)
	if err != nil {
		// The algo order is found, so the order it became exists: a -2013
		// means its query lags the trigger, never that nothing is held
		// (read as "not found" it would end a filled exit as gone, or
		// send a stop again): laggingRead.
		return exchange.Report{}, laggingRead(fmt.Sprintf("binance: order %s that algo order %d became", a.ActualOrderID, a.AlgoID), err)
	}
	actual := o.report()
	r.Status, r.Reason, r.FillOrderID = actual.Status, actual.Reason, string(a.ActualOrderID)
	r.FilledQuantity, r.AvgPrice, r.FillPrice = actual.FilledQuantity, actual.AvgPrice, actual.FillPrice
	return r, nil
}

// exitOrder is what placeAlgo sends for o: quantity rounded down to the
// market step, the trigger as resolved (on the tick already) — for a
// trailing stop, its callbackRate instead (callbackRate).
// It returns ErrBadExit (wrapped) for an exit hoox cannot send: an
// unknown role, or a target without a trigger price.
func (v *Venue) exitOrder(ctx context.Context, o exchange.Order) (symbol string, qty, trigger decimal.Decimal, typ string, err error) {
	symbol = exchange.VenueSymbol(o.Symbol)
	typ, ok := algoTypes[o.Exit]
	target := o.ExitTarget()
	switch {
	case ok && o.Exit == exchange.RoleTrailingStop:
		rate, reason := callbackRate(target)
		if reason != "" {
			return symbol, qty, trigger, "", fmt.Errorf("%w: %s", errBadExit, reason)
		}
		trigger = rate
	case !ok || target == nil || !target.Price.Valid:
		return symbol, qty, trigger, "", fmt.Errorf("%w: exit %q of %s has no trigger price", errBadExit, o.Exit, o.ClientOrderID)
	default:
		trigger = target.Price.Decimal
	}
	f, _, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return symbol, qty, trigger, "", err
	}
	return symbol, f.RoundQuantity(o.Quantity, true), trigger, typ, nil
}

// errBadExit is an exit order hoox cannot send as it stands.
var errBadExit = errors.New("binance: exit order cannot be sent")

// placeAlgo sends the exit o as a reduce-only conditional market order
// (POST /fapi/v1/algoOrder, algoType CONDITIONAL, clientAlgoId the leg's
// client order ID, triggered by the contract's last price).
func (v *Venue) placeAlgo(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	start := v.cfg.Now()
	if !clientOrderIDPattern.MatchString(o.ClientOrderID) {
		return rejected(ReasonClientOrderID), nil
	}
	stamp, err := v.serverTimeAt(ctx, start)
	if err != nil {
		return exchange.Report{}, err
	}
	ctx = v.withOrderExpiry(ctx, stamp)
	symbol, qty, trigger, typ, err := v.exitOrder(ctx, o)
	if errors.Is(err, errBadExit) {
		return rejected(err.Error()), nil
	}
	if r, err, done := refusal(err); done {
		return r, err
	}
	target := "triggerPrice"
	if o.Exit == exchange.RoleTrailingStop {
		target = "callbackRate"
	}
	p := params{}.add("algoType", "CONDITIONAL").add("symbol", symbol).add("side", strings.ToUpper(o.Side)).
		add("type", typ).add("quantity", qty.String()).add(target, trigger.String()).
		add("workingType", "CONTRACT_PRICE").add("reduceOnly", "true").add("clientAlgoId", o.ClientOrderID)
	var a algoAnswer
	req := request{method: http.MethodPost, path: v.prefix + "/algoOrder", params: p, signed: true, weight: 1, placement: true, stamp: stamp}
	if err := v.do(ctx, req, &a); err != nil {
		if r, err, done := refusal(fmt.Errorf("binance: place algo order %s: %w", o.ClientOrderID, err)); done {
			return r, err
		}
	}
	if a.AlgoID == 0 {
		return exchange.Report{}, fmt.Errorf("binance: place algo order %s: answer without algo id: %w", o.ClientOrderID, exchange.ErrUnknownOutcome)
	}
	return a.report(o.Exit), nil
}

// lookupAlgo finds the exit o by its clientAlgoId (GET /fapi/v1/algoOrder);
// exchange.ErrNotFound when Binance holds none (-2013). One held for
// another symbol, side, quantity or trigger is an ErrMismatch.
func (v *Venue) lookupAlgo(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	var a algoAnswer
	err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/algoOrder",
		params: params{}.add("clientAlgoId", o.ClientOrderID), signed: true, weight: 1}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassNotFound {
		return exchange.Report{}, fmt.Errorf("binance: look up algo order %s: %w: %w", o.ClientOrderID, exchange.ErrNotFound, err)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up algo order %s: %w", o.ClientOrderID, err)
	}
	r := a.report(o.Exit)
	symbol, qty, trigger, _, err := v.exitOrder(ctx, o)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up algo order %s: %w", o.ClientOrderID, err)
	}
	if venuekit.RoundedFrom(r.Quantity, o.Quantity) {
		// Sent under an older step (sentQuantity): the exit rested while
		// Binance changed the symbol's step.
		qty = r.Quantity
	}
	if err := exchange.Matches(exchange.Order{ClientOrderID: o.ClientOrderID, Side: o.Side, Action: "sell"}, symbol, qty, r); err != nil {
		return exchange.Report{}, fmt.Errorf("binance: %w", err)
	}
	held, what := a.TriggerPrice.Decimal, "trigger"
	if o.Exit == exchange.RoleTrailingStop {
		held, what = a.CallbackRate.Decimal, "callbackRate"
	}
	if !held.Equal(trigger) {
		return exchange.Report{}, fmt.Errorf("binance: %w: client algo id %s is held with %s %s, not %s", exchange.ErrMismatch, o.ClientOrderID, what, held, trigger)
	}
	return v.resolveTriggered(ctx, symbol, a, r)
}

// cancelAlgo cancels the exit o by its clientAlgoId: DELETE
// /fapi/v1/algoOrder (trade/rest-api/Cancel-Algo-Order.md, "Cancel an
// active algo (conditional) order", by algoId or clientAlgoId; the answer
// is algoId, clientAlgoId, code "200", msg "success"), reported cancelled
// — the query shows it algoStatus CANCELED from then on
// (Query-Algo-Order.md). An exit no longer active — already cancelled,
// triggered, or never placed — is refused (-2011 CANCEL_REJECTED, or -2013
// NO_SUCH_ORDER; error-code.md) and looked up instead, reported as
// Binance holds it: idempotent, as a retry after a crash between two
// cancels needs; exchange.ErrNotFound when Binance holds none.
func (v *Venue) cancelAlgo(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	var a struct {
		AlgoID       int64  `json:"algoId"`
		ClientAlgoID string `json:"clientAlgoId"`
	}
	err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/algoOrder",
		params: params{}.add("clientAlgoId", o.ClientOrderID), signed: true, weight: 1}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && (apiErr.Code == -2011 || apiErr.Class == ClassNotFound) {
		return v.lookupAlgo(ctx, o)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: cancel algo order %s: %w", o.ClientOrderID, err)
	}
	if a.AlgoID == 0 || a.ClientAlgoID != o.ClientOrderID {
		return exchange.Report{}, fmt.Errorf("binance: cancel algo order %s: answered for algo %d %q: %w",
			o.ClientOrderID, a.AlgoID, a.ClientAlgoID, exchange.ErrUnknownOutcome)
	}
	r := exchange.Report{ExchangeOrderID: strconv.FormatInt(a.AlgoID, 10), Symbol: exchange.VenueSymbol(o.Symbol),
		Side: o.Side, Quantity: o.Quantity, Status: exchange.StatusCancelled}
	if rate, reason := callbackRate(o.TrailingStop); o.Exit == exchange.RoleTrailingStop && reason == "" {
		r.CallbackRate = decimal.NewNullDecimal(rate)
	} else if t := o.ExitTarget(); t != nil && t.Price.Valid {
		if o.Exit == exchange.RoleTakeProfit {
			r.TakeProfit = t.Price
		} else {
			r.StopLoss = t.Price
		}
	}
	return r, nil
}

// laggingRead is err, the failed read of an order that must exist (what a
// found algo order became, a found list's own order), as a lookup's error:
// ErrNotFound (-2013) is a read that lags, so it is kept out of the chain
// ("not readable yet"); any other error keeps its chain (a refused key
// still reads as one).
func laggingRead(what string, err error) error {
	if errors.Is(err, exchange.ErrNotFound) {
		return fmt.Errorf("%s: not readable yet (%v)", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
