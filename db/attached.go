package db

import (
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// Statuses of an exit attached to an order (take-profit, stop-loss). An
// exit the venue takes on the order itself has its status from the
// entry's: it is set when the entry fills, and hoox does not see it
// trigger. An exit placed as its own order (a leg: Binance USDⓈ-M algo
// orders, a Binance spot OCO list or lone exit, a Bybit trailing stop) is
// followed to its end, and shows what the venue last said of it.
const (
	// AttachedPlaced: the venue holds the exit (on the position the
	// entry opened, or as its own resting order).
	AttachedPlaced = "placed"
	// AttachedWaiting: the entry rests (a limit order); the venue sets the
	// exit when it fills.
	AttachedWaiting = "waiting_for_entry"
	// AttachedNotPlaced: the entry was rejected, or cancelled or expired
	// with nothing filled, and its exits with it; or the venue refused the
	// exit's own order.
	AttachedNotPlaced = "not_placed"
	// AttachedEnded: an exit placed on its own (a leg) that the venue no
	// longer holds without saying it executed: expired (a Bybit trailing
	// stop gone with its position, a Binance algo order the system
	// cancelled), or an OCO list that ended with no record of which of its
	// orders executed (a row from before hoox followed exits).
	AttachedEnded = "ended"
	// AttachedFilled: the exit triggered and its order executed (for an
	// OCO list: this one of its two orders).
	AttachedFilled = "filled"
	// AttachedCancelled: the exit was cancelled — by a cancel signal, by
	// hand, by hoox once another exit of the entry filled, or (an OCO
	// list's other order) by the venue when the first one executed.
	AttachedCancelled = "cancelled"
	// AttachedRejected: the venue accepted the exit and then dropped it
	// (Binance algoStatus REJECTED: the triggered order failed).
	AttachedRejected = "rejected"
	// AttachedNotFollowed: the exit was still resting at its follow
	// horizon; hoox no longer asks about it (the venue may still hold it).
	AttachedNotFollowed = "not_followed"
)

// legExitStatus is the attached status of an exit that is its own order
// (row o), as role (an OCO row holds two).
func legExitStatus(o OrderRow, role string) string {
	switch {
	case o.Status == string(exchange.StatusRejected) && o.FinalAt == nil:
		return AttachedNotPlaced
	case o.Status == string(exchange.StatusRejected):
		return AttachedRejected
	case o.Status == string(exchange.StatusOpen) && o.UnfollowedAt != nil:
		return AttachedNotFollowed
	case o.Status == string(exchange.StatusOpen):
		return AttachedPlaced
	case o.Status == string(exchange.StatusExpired):
		return AttachedEnded
	case o.Status == string(exchange.StatusCancelled):
		return AttachedCancelled
	case o.Role == exchange.RoleOCO:
		switch {
		case o.ExecutedExit == nil:
			return AttachedEnded
		case *o.ExecutedExit == role:
			return AttachedFilled
		}
		return AttachedCancelled
	}
	return AttachedFilled
}

// AttachedExit is one exit attached to an order, as the answer, the admin
// API, the web page and the audit show it beside the order.
type AttachedExit struct {
	Role         string
	TriggerPrice decimal.Decimal
	// CallbackRate is a trailing stop's rate in percent (it has no
	// trigger price: TriggerPrice is zero); invalid on other exits.
	CallbackRate decimal.NullDecimal
	// TrailingDistance is a trailing stop's price distance (Bybit); invalid
	// on other exits and on a trailing stop that trails by a rate.
	TrailingDistance decimal.NullDecimal
	Status           string
	// ClientOrderID and ExchangeOrderID are set for an exit that is its
	// own order (a Binance USDⓈ-M conditional order: a leg); empty for
	// an exit the venue holds on the entry itself.
	ClientOrderID   string
	ExchangeOrderID string
}

// Attached lists the exits recorded on o (take_profit, then stop_loss),
// or nil when it carries none.
func (o OrderRow) Attached() []AttachedExit {
	if o.Role == exchange.RoleTakeProfit || o.Role == exchange.RoleStopLoss || o.Role == exchange.RoleTrailingStop {
		// An exit placed as its own order (a leg), followed to its end.
		price := o.TakeProfit
		if o.Role == exchange.RoleStopLoss {
			price = o.StopLoss
		}
		e := AttachedExit{Role: o.Role, TriggerPrice: price.Decimal, Status: legExitStatus(o, o.Role), ClientOrderID: o.ClientOrderID}
		if o.Role == exchange.RoleTrailingStop {
			e.TriggerPrice, e.CallbackRate, e.TrailingDistance = decimal.Zero, o.CallbackRate, o.TrailingDistance
		}
		if o.ExchangeOrderID != nil {
			e.ExchangeOrderID = *o.ExchangeOrderID
		}
		return []AttachedExit{e}
	}
	if o.Role == exchange.RoleOCO {
		// The exits of one order list (Binance spot OCO): a take-profit
		// with a stop-loss, or with a trailing stop (its rate, no
		// trigger), each shown with the list's IDs; once the list
		// executed, the order that executed is filled and the other
		// cancelled.
		var out []AttachedExit
		for _, a := range []struct {
			role  string
			price decimal.NullDecimal
		}{{exchange.RoleTakeProfit, o.TakeProfit}, {exchange.RoleStopLoss, o.StopLoss}, {exchange.RoleTrailingStop, decimal.NullDecimal{}}} {
			e := AttachedExit{Role: a.role, TriggerPrice: a.price.Decimal, Status: legExitStatus(o, a.role), ClientOrderID: o.ClientOrderID}
			switch {
			case a.role == exchange.RoleTrailingStop && !o.CallbackRate.Valid:
				continue
			case a.role == exchange.RoleTrailingStop:
				e.CallbackRate = o.CallbackRate
			case a.role == exchange.RoleStopLoss && !a.price.Valid && o.CallbackRate.Valid:
				continue
			}
			if o.ExchangeOrderID != nil {
				e.ExchangeOrderID = *o.ExchangeOrderID
			}
			out = append(out, e)
		}
		return out
	}
	status := AttachedPlaced
	switch o.Status {
	case string(exchange.StatusOpen):
		status = AttachedWaiting
	case string(exchange.StatusRejected):
		status = AttachedNotPlaced
	case string(exchange.StatusCancelled), string(exchange.StatusExpired):
		// Nothing filled, no position: the venue never set the exits. A
		// partial fill keeps them placed: Bybit's Partial mode sets them on
		// what filled (create-order.mdx, tpslMode).
		if !o.FilledQuantity.Decimal.IsPositive() {
			status = AttachedNotPlaced
		}
	}
	var out []AttachedExit
	for _, a := range []struct {
		role  string
		price decimal.NullDecimal
	}{{exchange.RoleTakeProfit, o.TakeProfit}, {exchange.RoleStopLoss, o.StopLoss}} {
		if a.price.Valid {
			out = append(out, AttachedExit{Role: a.role, TriggerPrice: a.price.Decimal, Status: status})
		}
	}
	return out
}
