package exchange

// RoleOCO is the role of one leg that carries an entry's take-profit and
// stop-loss together as a venue's one-cancels-the-other order list
// (Binance spot: POST /api/v3/orderList/oco). Its Order has Exit set to
// RoleOCO and both TakeProfit and StopLoss set.
const RoleOCO = "oco"

// ListExiter is implemented by a LegAttacher whose exits are one order
// list (an OCO) rather than one order per exit: the take-profit and the
// stop-loss sell the same coins, so two separate orders would each need
// the whole quantity and the venue would refuse the second.
type ListExiter interface {
	ExitsAsOneList() bool
}

// ExitsAsOneList reports whether v takes an entry's exits as one OCO leg
// (PlanOCOLeg) rather than one leg per exit (PlanExitLegs).
func ExitsAsOneList(v Venue) bool {
	le, ok := v.(ListExiter)
	return ok && AttachesAsLegs(v) && le.ExitsAsOneList()
}

// PlanOCOLeg moves o's take-profit and stop-loss into one leg, role
// RoleOCO, under partID(1): a close of the entry on the opposite side
// with both targets as asked (a price, or a percent still to resolve from
// the fill). o itself is returned without them. The venue refuses an
// entry with only one of the two before this is reached
// (AttachmentCapable).
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
		Ledger: o.Ledger}
	if o.TakeProfit != nil {
		tp := *o.TakeProfit
		exit.TakeProfit = &tp
	}
	if o.StopLoss != nil {
		sl := *o.StopLoss
		exit.StopLoss = &sl
	}
	entry.Legs = append(entry.Legs, Leg{Role: RoleOCO, Order: exit})
	return entry
}
