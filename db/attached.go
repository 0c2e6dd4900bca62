package db

import (
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// Statuses of an exit attached to an order (take-profit, stop-loss), from
// the entry's status: a venue that takes them on the order sets them when
// the entry fills. hoox does not follow whether one later triggered.
const (
	// AttachedPlaced: the entry filled, and the venue holds the exit on
	// the position it opened.
	AttachedPlaced = "placed"
	// AttachedWaiting: the entry rests (a limit order); the venue sets the
	// exit when it fills.
	AttachedWaiting = "waiting_for_entry"
	// AttachedNotPlaced: the entry was rejected, or cancelled or expired
	// with nothing filled, and its exits with it.
	AttachedNotPlaced = "not_placed"
	// AttachedEnded: an exit placed on its own (a leg) that the venue no
	// longer holds: cancelled, or gone with its position (a Bybit
	// trailing stop).
	AttachedEnded = "ended"
)

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
		// An exit placed as its own order (a leg): the venue holds it
		// unless it refused it.
		price := o.TakeProfit
		if o.Role == exchange.RoleStopLoss {
			price = o.StopLoss
		}
		st := AttachedPlaced
		switch o.Status {
		case string(exchange.StatusRejected):
			st = AttachedNotPlaced
		case string(exchange.StatusCancelled), string(exchange.StatusExpired):
			st = AttachedEnded
		}
		e := AttachedExit{Role: o.Role, TriggerPrice: price.Decimal, Status: st, ClientOrderID: o.ClientOrderID}
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
		// trigger), each shown with the list's IDs.
		st := AttachedPlaced
		if o.Status == string(exchange.StatusRejected) {
			st = AttachedNotPlaced
		}
		var out []AttachedExit
		for _, a := range []struct {
			role  string
			price decimal.NullDecimal
		}{{exchange.RoleTakeProfit, o.TakeProfit}, {exchange.RoleStopLoss, o.StopLoss}, {exchange.RoleTrailingStop, decimal.NullDecimal{}}} {
			e := AttachedExit{Role: a.role, TriggerPrice: a.price.Decimal, Status: st, ClientOrderID: o.ClientOrderID}
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
