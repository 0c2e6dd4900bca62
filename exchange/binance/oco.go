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

var _ exchange.ListExiter = (*Venue)(nil)

// ExitsAsOneList is true on spot: an entry's take-profit and stop-loss
// together are one OCO order list (rest-api.md, "New Order list - OCO"):
// both sell the coins the entry bought, and only a list lets one of them
// cancel the other (two plain orders would each lock the whole quantity).
func (v *Venue) ExitsAsOneList() bool { return !v.futures() }

// ReasonSpotTrailing refuses a spot trailing stop that is not a percent of
// at least 0.01 %: Binance spot trails by trailingDelta in BIPS
// (faqs/trailing-stop-faq.md), a percent, not a price distance.
const ReasonSpotTrailing = `trailing_stop on Binance spot takes a percent ({"percent": p}, at least 0.01: Binance's trailingDelta in BIPS), not a price distance`

// refuseSpotAttachments says which attached exits spot cannot take. A
// buy's take-profit with a stop-loss or a trailing stop is one OCO order
// list (its stop order trails for the latter); one exit alone is one
// plain order (spotexit.go). Refused: a trailing stop beside a stop-loss
// (two stops selling the same coins, which Binance would refuse for want
// of balance), exits on a sell (a spot sell opens no position to protect)
// and on a close. Exits are placed once the entry filled: at once for a
// market buy, when the follow job records a limit buy filled.
func refuseSpotAttachments(o exchange.Order) string {
	switch {
	case exchange.IsClose(o.Action):
		return "take_profit and stop_loss belong to an entry, not a close"
	case o.TrailingStop != nil && o.StopLoss != nil:
		return "a trailing_stop on Binance spot goes alone or beside a take_profit (one OCO list whose stop trails); beside a stop_loss it would be a second stop selling the same coins: send one of them"
	case o.TrailingStop != nil && trailingBIPS(o.TrailingStop) < 1:
		return ReasonSpotTrailing
	case o.Side != "buy":
		return "take_profit, stop_loss and trailing_stop on Binance spot protect a buy; a spot sell opens no position"
	}
	return ""
}

// ocoIDs are the client order IDs of an OCO's take-profit and stop-loss
// orders, derived from its listClientOrderId (the leg's client order ID):
// Binance wants them distinct from it, unique among open orders, and at
// most 36 of [.A-Z:/a-z0-9_-] — hoox's 32 characters plus two.
func ocoIDs(list string) (tp, sl string) { return list + "tp", list + "sl" }

// ocoAnswer is an order list as POST /api/v3/orderList/oco and GET
// /api/v3/orderList answer it (rest-api.md).
type ocoAnswer struct {
	OrderListID       int64  `json:"orderListId"`
	ListClientOrderID string `json:"listClientOrderId"`
	ListOrderStatus   string `json:"listOrderStatus"`
	Symbol            string `json:"symbol"`
	Orders            []struct {
		ClientOrderID string `json:"clientOrderId"`
	} `json:"orders"`
}

// report maps an order list onto o's Report: EXECUTING is open (Binance
// holds both exits), ALL_DONE is filled (one exit executed and cancelled
// the other) — lookupOCO asks the orders themselves which it was, as the
// list does not say — REJECT is rejected. The take-profit and stop-loss
// reported are the ones the list was placed with.
func (a ocoAnswer) report(o exchange.Order, qty decimal.Decimal) exchange.Report {
	r := exchange.Report{ExchangeOrderID: strconv.FormatInt(a.OrderListID, 10), Symbol: a.Symbol, Side: o.Side,
		Quantity: qty, Status: exchange.StatusOpen}
	switch a.ListOrderStatus {
	case "ALL_DONE":
		r.Status = exchange.StatusFilled
	case "REJECT":
		r.Status, r.Reason = exchange.StatusRejected, "binance rejected the order list"
	}
	if o.TakeProfit != nil {
		r.TakeProfit = o.TakeProfit.Price
	}
	if o.StopLoss != nil {
		r.StopLoss = o.StopLoss.Price
	}
	if delta := trailingBIPS(o.TrailingStop); delta > 0 {
		r.CallbackRate = decimal.NewNullDecimal(decimal.New(delta, -2))
	}
	return r
}

// ocoOrder is what placeOCO sends for o: the quantity rounded down to
// LOT_SIZE's step (the list's orders are not market orders), the
// take-profit as resolved (on the tick already), and the stop order's
// stopPrice as resolved or, for a trailing stop beside the take-profit,
// its trailingDelta in BIPS (delta; sl zero). errBadExit for an OCO
// without a take-profit price and a stop-loss price or trailing percent.
func (v *Venue) ocoOrder(ctx context.Context, o exchange.Order) (symbol string, qty, tp, sl decimal.Decimal, delta int64, err error) {
	symbol = exchange.VenueSymbol(o.Symbol)
	hasTP := o.TakeProfit != nil && o.TakeProfit.Price.Valid
	hasSL := o.StopLoss != nil && o.StopLoss.Price.Valid
	delta = trailingBIPS(o.TrailingStop)
	if !hasTP || (!hasSL && delta < 1) {
		return symbol, qty, tp, sl, 0, fmt.Errorf("%w: OCO %s needs a take-profit price and a stop-loss price or trailing percent", errBadExit, o.ClientOrderID)
	}
	if hasSL {
		sl, delta = o.StopLoss.Price.Decimal, 0
	}
	f, _, err := v.filtersFor(ctx, symbol)
	if err != nil {
		return symbol, qty, tp, sl, delta, err
	}
	return symbol, f.RoundQuantity(o.Quantity, false), o.TakeProfit.Price.Decimal, sl, delta, nil
}

// placeOCO sends the exit o as one OCO order list (POST
// /api/v3/orderList/oco, rest-api.md "New Order list - OCO"):
// listClientOrderId is the leg's client order ID; for a SELL list the
// above order is a LIMIT_MAKER at the take-profit and the below order a
// STOP_LOSS (a market order once triggered) at the stop-loss — Binance's
// rule "LIMIT_MAKER price > Last Traded Price > STOP_LOSS stopPrice"; a BUY
// list the reverse. With a trailing stop instead of a stop-loss the
// STOP_LOSS carries trailingDelta and no stopPrice.
func (v *Venue) placeOCO(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	start := v.cfg.Now()
	if !clientOrderIDPattern.MatchString(o.ClientOrderID) {
		return rejected(ReasonClientOrderID), nil
	}
	stamp, err := v.serverTimeAt(ctx, start)
	if err != nil {
		return exchange.Report{}, err
	}
	ctx = v.withOrderExpiry(ctx, stamp)
	symbol, qty, tp, sl, delta, err := v.ocoOrder(ctx, o)
	if errors.Is(err, errBadExit) {
		return rejected(err.Error()), nil
	}
	if r, err, done := refusal(err); done {
		return r, err
	}
	tpID, slID := ocoIDs(o.ClientOrderID)
	limit, stop := "above", "below"
	if o.Side == "buy" {
		limit, stop = "below", "above"
	}
	p := params{}.add("symbol", symbol).add("side", strings.ToUpper(o.Side)).add("quantity", qty.String()).
		add("listClientOrderId", o.ClientOrderID).
		add(limit+"Type", "LIMIT_MAKER").add(limit+"Price", tp.String()).add(limit+"ClientOrderId", tpID).
		add(stop+"Type", "STOP_LOSS")
	if delta > 0 {
		// A trailing stop beside the take-profit: the stop order trails
		// from the next trade (faqs/trailing-stop-faq.md).
		p = p.add(stop+"TrailingDelta", strconv.FormatInt(delta, 10))
	} else {
		p = p.add(stop+"StopPrice", sl.String())
	}
	p = p.add(stop+"ClientOrderId", slID).add("newOrderRespType", "RESULT")
	var a ocoAnswer
	req := request{method: http.MethodPost, path: v.prefix + "/orderList/oco", params: p, signed: true, weight: 1, placement: true, stamp: stamp}
	if err := v.do(ctx, req, &a); err != nil {
		if r, err, done := refusal(fmt.Errorf("binance: place order list %s: %w", o.ClientOrderID, err)); done {
			return r, err
		}
	}
	if a.OrderListID == 0 {
		return exchange.Report{}, fmt.Errorf("binance: place order list %s: answer without order list id: %w", o.ClientOrderID, exchange.ErrUnknownOutcome)
	}
	return a.report(o, qty), nil
}

// lookupOCO finds the exit o by its listClientOrderId (GET
// /api/v3/orderList with origClientOrderId, rest-api.md "Query Order
// list", weight 4); exchange.ErrNotFound when Binance holds none (-2013).
// A list for another symbol, or whose orders are not the two client IDs
// hoox derives for it, is an ErrMismatch. The list query carries no
// prices: the targets are those of the leg's stored order, which is the
// only order hoox ever sends under the ID.
func (v *Venue) lookupOCO(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	var a ocoAnswer
	err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/orderList",
		params: params{}.add("origClientOrderId", o.ClientOrderID), signed: true, weight: 4}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && apiErr.Class == ClassNotFound {
		return exchange.Report{}, fmt.Errorf("binance: look up order list %s: %w: %w", o.ClientOrderID, exchange.ErrNotFound, err)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up order list %s: %w", o.ClientOrderID, err)
	}
	symbol, qty, _, _, _, err := v.ocoOrder(ctx, o)
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: look up order list %s: %w", o.ClientOrderID, err)
	}
	tpID, slID := ocoIDs(o.ClientOrderID)
	var ids []string
	for _, x := range a.Orders {
		ids = append(ids, x.ClientOrderID)
	}
	slices.Sort(ids)
	if a.Symbol != symbol || !slices.Equal(ids, []string{slID, tpID}) {
		return exchange.Report{}, fmt.Errorf("binance: %w: list client order id %s is held for %s with orders %v, not %s with %s and %s",
			exchange.ErrMismatch, o.ClientOrderID, a.Symbol, ids, symbol, tpID, slID)
	}
	r := a.report(o, qty)
	if a.ListOrderStatus == "ALL_DONE" {
		return v.listOutcome(ctx, symbol, r, tpID, slID, stopRole(o))
	}
	return r, nil
}

// listOutcome completes r, the report of a finished list (ALL_DONE, which
// does not say how it ended), from its two orders (GET /api/v3/order by
// origClientOrderId, weight 4 each): the one that executed makes the list
// filled — "if one of the orders execute, the other is automatically
// expired" (faqs/spot_glossary.md, OCO) — with its executed quantity,
// average price (cummulativeQuoteQty / executedQty), its orderId for the
// trades (FillOrderID) and which exit it was (ExecutedExit); neither
// executed means the list was cancelled or expired as a whole: cancelled.
// stop is the role of the list's stop order (stopRole).
func (v *Venue) listOutcome(ctx context.Context, symbol string, r exchange.Report, tpID, slID, stop string) (exchange.Report, error) {
	r.Status = exchange.StatusCancelled
	for _, x := range []struct{ id, role string }{{tpID, exchange.RoleTakeProfit}, {slID, stop}} {
		var a orderAnswer
		err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/order",
			params: params{}.add("symbol", symbol).add("origClientOrderId", x.id), signed: true, weight: 4}, &a)
		if err != nil {
			// The list is found, so its orders exist.
			return exchange.Report{}, laggingRead("binance: order "+x.id+" of the list", err)
		}
		if a.ExecutedQty.IsPositive() {
			executed := a.report()
			r.Status, r.FilledQuantity, r.ExecutedExit = exchange.StatusFilled, a.ExecutedQty, x.role
			r.AvgPrice, r.FillPrice, r.FillOrderID = executed.AvgPrice, executed.AvgPrice, executed.ExchangeOrderID
			return r, nil
		}
	}
	return r, nil
}

// cancelOCO cancels the exit o, a whole order list, by its
// listClientOrderId (DELETE /api/v3/orderList, rest-api.md "Cancel Order
// list": "Cancel an entire Order list"; the answer is the list ALL_DONE
// with its orderReports). A list no longer resting is refused (-2011
// CANCEL_REJECTED, errors.md) and looked up instead, so a retry is
// idempotent; exchange.ErrNotFound when Binance holds none.
func (v *Venue) cancelOCO(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	symbol := exchange.VenueSymbol(o.Symbol)
	var a struct {
		ocoAnswer
		OrderReports []orderAnswer `json:"orderReports"`
	}
	err := v.do(ctx, request{method: http.MethodDelete, path: v.prefix + "/orderList",
		params: params{}.add("symbol", symbol).add("listClientOrderId", o.ClientOrderID), signed: true, weight: 1}, &a)
	if apiErr, ok := errors.AsType[*APIError](err); ok && (apiErr.Code == -2011 || apiErr.Class == ClassNotFound) {
		return v.lookupOCO(ctx, o)
	}
	if err != nil {
		return exchange.Report{}, fmt.Errorf("binance: cancel order list %s: %w", o.ClientOrderID, err)
	}
	if a.OrderListID == 0 || a.ListClientOrderID != o.ClientOrderID {
		return exchange.Report{}, fmt.Errorf("binance: cancel order list %s: answered for list %d %q: %w",
			o.ClientOrderID, a.OrderListID, a.ListClientOrderID, exchange.ErrUnknownOutcome)
	}
	r := a.report(o, o.Quantity)
	r.Status = exchange.StatusCancelled
	tpID, _ := ocoIDs(o.ClientOrderID)
	for _, x := range a.OrderReports {
		if x.ExecutedQty.IsPositive() {
			// Executed in part before the cancel: what it sold counts.
			executed := x.report()
			r.Status, r.FilledQuantity, r.ExecutedExit = exchange.StatusFilled, x.ExecutedQty, stopRole(o)
			if x.ClientOrderID == tpID {
				r.ExecutedExit = exchange.RoleTakeProfit
			}
			r.AvgPrice, r.FillPrice, r.FillOrderID = executed.AvgPrice, executed.AvgPrice, executed.ExchangeOrderID
		}
	}
	return r, nil
}

// stopRole is the exit the stop order of the list o stands for: its
// stop-loss, or the trailing stop that trails in its place.
func stopRole(o exchange.Order) string {
	if o.StopLoss == nil && o.TrailingStop != nil {
		return exchange.RoleTrailingStop
	}
	return exchange.RoleStopLoss
}
