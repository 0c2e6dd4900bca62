package exchange

// RoleOCO is the role of one leg that carries an entry's take-profit and
// stop-loss (or trailing stop) together as a venue's one-cancels-the-other
// order list (Binance spot: POST /api/v3/orderList/oco). Its Order has
// Exit set to RoleOCO, TakeProfit set, and StopLoss or TrailingStop.
const RoleOCO = "oco"

// ListExiter is implemented by a LegAttacher whose take-profit and
// stop-loss together are one order list (an OCO) rather than one order
// per exit: both sell the same coins, so two separate orders would each
// need the whole quantity and the venue would refuse the second. A lone
// exit is one order, as on any LegAttacher (PlanSellExits). Its exits
// sell what the entry received: the leg runner nets a commission charged
// in the coin bought.
type ListExiter interface {
	ExitsAsOneList() bool
}

// ExitsAsOneList reports whether v takes an entry's take-profit and
// stop-loss together as one OCO leg (PlanOCOLeg) rather than one leg per
// exit (PlanExitLegs); see PlanSellExits.
func ExitsAsOneList(v Venue) bool {
	le, ok := v.(ListExiter)
	return ok && AttachesAsLegs(v) && le.ExitsAsOneList()
}

// PlanSellExits plans o's exits on a ListExiter venue: a take-profit with
// a stop-loss or a trailing stop as one OCO leg (PlanOCOLeg: the list's
// stop order trails for the latter), one exit alone as one leg
// (PlanExitLegs), a single order. The venue refuses the combinations
// it cannot place before this is reached (AttachmentCapable).
func PlanSellExits(o Order, partID func(i int) string) Order {
	if o.TakeProfit != nil && (o.StopLoss != nil || o.TrailingStop != nil) {
		return PlanOCOLeg(o, partID)
	}
	return PlanExitLegs(o, partID)
}

// PlanOCOLeg moves o's take-profit and stop-loss (or trailing stop) into
// one leg, role RoleOCO, under partID(1): a close of the entry on the
// opposite side with the targets as asked (a price, or a percent still to
// resolve from the fill). o itself is returned without them.
// PlanSellExits calls it only for a take-profit with one of the others.
func PlanOCOLeg(o Order, partID func(i int) string) Order {
	if !o.HasAttachments() {
		return o
	}
	side := "sell"
	if o.Side == "sell" {
		side = "buy"
	}
	entry := o
	entry.TakeProfit, entry.StopLoss, entry.TrailingStop = nil, nil, nil
	exit := Order{ClientOrderID: partID(len(entry.Legs) + 1), Symbol: o.Symbol, Action: "close", Side: side,
		OrderType: "market", Quantity: o.Quantity, Test: o.Test, Exit: RoleOCO,
		// The list sells what the entry bought: its fills count in the
		// same strategy's spot ledger.
		Ledger: o.Ledger, Strategy: o.Strategy}
	if o.TakeProfit != nil {
		tp := *o.TakeProfit
		exit.TakeProfit = &tp
	}
	if o.StopLoss != nil {
		sl := *o.StopLoss
		exit.StopLoss = &sl
	}
	if o.TrailingStop != nil {
		ts := *o.TrailingStop
		exit.TrailingStop = &ts
	}
	entry.Legs = append(entry.Legs, Leg{Role: RoleOCO, Order: exit})
	return entry
}
