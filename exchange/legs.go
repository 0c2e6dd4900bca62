package exchange

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"
)

// Roles of a trace's orders (orders.role): the signal's own order, and the
// legs a signal may plan with it.
const (
	RolePrimary   = "primary"
	RoleClosePart = "close_part"
)

// Leg is one follow-up order of a signal, planned with its primary order.
type Leg struct {
	// Role is what the leg is to its trace (RoleClosePart, …).
	Role string
	// Order is sent as it is, under its own Order.ClientOrderID.
	Order Order
}

// CloseSplitter is implemented by a venue that refuses a market order above
// a maximum quantity (SizingFacts.MaxMarketQty) and does not split a large
// close itself: the gateway reads the position before the intent and plans
// the close as several reduce-only parts (SplitClose).
type CloseSplitter interface {
	// SplitsCloses reports whether hoox must split a close larger than the
	// venue's maximum market quantity.
	SplitsCloses() bool
}

// SplitsCloses reports whether v needs hoox to split large closes (see
// CloseSplitter); such a venue is also a Sizer, which reads the position.
func SplitsCloses(v Venue) bool {
	cs, ok := v.(CloseSplitter)
	_, sizer := v.(Sizer)
	return ok && sizer && cs.SplitsCloses()
}

// Split records how a close was split: the position read before the
// intent, the venue's maximum market quantity and the parts planned.
type Split struct {
	Position     string   `json:"position"`
	MaxMarketQty string   `json:"max_market_qty"`
	Parts        []string `json:"parts"`
}

// SplitClose plans the close o of f.Position — all of it, or o.Quantity of
// it when o is already a partial close (percent_of_position) — as parts of
// at most f.MaxMarketQty, each a reduce-only partial close on the side that
// reduces the position. When one order can carry it (or there is no
// position or no maximum) o is returned unchanged and false. Otherwise the
// returned order is the first part (the primary) with the others as its
// legs, each under partID(i) for part i ≥ 1. Every part is a multiple of
// f.Step, and none falls below f.MinQty when the venue's rules allow it.
func SplitClose(o Order, f SizingFacts, partID func(i int) string) (Order, bool) {
	max := f.MaxMarketQty
	if f.Step.IsPositive() {
		max = max.Div(f.Step).Floor().Mul(f.Step)
	}
	pos := f.Position
	side := o.Side
	switch {
	case !max.IsPositive():
		return o, false
	case side == "" && pos.IsPositive() && o.Action != "close_short":
		side = "sell"
	case side == "" && pos.IsNegative() && o.Action != "close_long":
		side = "buy"
	case side == "":
		return o, false
	}
	total := pos.Abs()
	if o.Partial {
		total = decimal.Min(o.Quantity, total)
	}
	if f.Step.IsPositive() {
		total = total.Div(f.Step).Floor().Mul(f.Step)
	}
	if total.LessThanOrEqual(max) {
		return o, false
	}
	var parts []decimal.Decimal
	for left := total; left.IsPositive(); {
		p := decimal.Min(left, max)
		parts = append(parts, p)
		left = left.Sub(p)
	}
	if last := len(parts) - 1; f.MinQty.IsPositive() && parts[last].LessThan(f.MinQty) {
		// Move enough from the part before so the last one is sendable.
		need := f.MinQty.Sub(parts[last])
		if f.Step.IsPositive() {
			need = need.Div(f.Step).Ceil().Mul(f.Step)
		}
		parts[last-1], parts[last] = parts[last-1].Sub(need), parts[last].Add(need)
	}
	split := &Split{Position: pos.String(), MaxMarketQty: f.MaxMarketQty.String()}
	for _, p := range parts {
		split.Parts = append(split.Parts, p.String())
	}
	first := o
	first.Side, first.Partial, first.ReduceOnly, first.Quantity = side, true, true, parts[0]
	first.Split, first.Legs = split, nil
	part := first
	part.Sizing, part.Split = nil, nil
	for i, q := range parts[1:] {
		leg := part
		leg.ClientOrderID, leg.Quantity = partID(i+1), q
		first.Legs = append(first.Legs, Leg{Role: RoleClosePart, Order: leg})
	}
	return first, true
}

// LegAttacher is implemented by a venue that takes an entry's attached
// exits (take-profit, stop-loss) as separate reduce-only conditional
// orders, placed after the entry filled (Binance USDⓈ-M), rather than on
// the entry itself: the gateway plans them as legs (PlanExitLegs), and
// their percent targets are resolved from the entry's fill price when they
// are first sent.
type LegAttacher interface {
	AttachesAsLegs() bool
}

// ExitChecker is implemented by a LegAttacher that can tell before
// anything is sent that the symbol's own rules refuse the exits o asks
// for (an order type the symbol does not list, a trailing rate outside
// its range): the gateway then refuses the signal (422 order_rejected,
// nothing sent) rather than place an entry whose exit would be refused
// once it filled, leaving the position without the protection asked for.
// reason is empty when the exits can go; err when the venue could not be
// asked.
type ExitChecker interface {
	CheckExits(ctx context.Context, o Order) (reason string, err error)
}

// AttachesAsLegs reports whether v takes attached exits as legs.
func AttachesAsLegs(v Venue) bool {
	la, ok := v.(LegAttacher)
	return ok && la.AttachesAsLegs()
}

// PlanExitLegs moves o's take-profit and stop-loss into legs: each a
// reduce-only close of the entry on the opposite side, with Exit set to its
// role and its target as asked (a price, or a percent still to resolve from
// the fill), under partID(i). o itself is returned without them: the entry
// goes to the venue as a plain order.
func PlanExitLegs(o Order, partID func(i int) string) Order {
	if !o.HasAttachments() {
		return o
	}
	side := "sell"
	if o.Side == "sell" {
		side = "buy"
	}
	entry := o
	entry.TakeProfit, entry.StopLoss, entry.TrailingStop = nil, nil, nil
	for _, r := range o.Attachments() {
		exit := Order{ClientOrderID: partID(len(entry.Legs) + 1), Symbol: o.Symbol, Action: "close", Side: side,
			ReduceOnly: true, OrderType: "market", Quantity: o.Quantity, Test: o.Test, Exit: r.Role,
			// A spot exit sells what the entry bought: its fill counts in
			// the strategy's spot ledger (nil elsewhere).
			Ledger: o.Ledger,
			// It is the entry's strategy's, for a cancel naming one.
			Strategy: o.Strategy,
			// It covers what the entry opened on its side (OpenedBy).
			PositionBefore: o.PositionBefore}
		a := *r.Attached
		switch r.Role {
		case RoleTakeProfit:
			exit.TakeProfit = &a
		case RoleStopLoss:
			exit.StopLoss = &a
		default:
			exit.TrailingStop = &a
		}
		entry.Legs = append(entry.Legs, Leg{Role: r.Role, Order: exit})
	}
	return entry
}

// OpenedBy is what an entry on side ("buy" or "sell") that filled filled
// opened or added to a position on its own side, given the position
// before it (signed, short < 0): the fill less what it took off a
// position on the other side. Zero when the entry only reduced or closed
// that position.
func OpenedBy(side string, before, filled decimal.Decimal) decimal.Decimal {
	against := before
	if side == "buy" {
		against = before.Neg()
	}
	if !against.IsPositive() {
		return filled
	}
	return decimal.Max(decimal.Zero, filled.Sub(against))
}

// EntrySide is the side of the entry exit o protects: the other one.
func (o Order) EntrySide() string {
	if o.Side == "buy" {
		return "sell"
	}
	return "buy"
}

// OnlyReduced says why exit o is not placed when the entry it protects
// filled filled and only reduced (or closed) the position PositionBefore
// held on the other side: it opened nothing for o to protect, and a
// reduce-only o on the entry's side would rest on a flat position, or cut
// a later position it was never asked for. "" when the entry opened
// something, or its position before is not known.
func (o Order) OnlyReduced(filled decimal.Decimal) string {
	if o.PositionBefore == nil || OpenedBy(o.EntrySide(), *o.PositionBefore, filled).IsPositive() {
		return ""
	}
	held, was := "long", o.PositionBefore.Abs()
	if o.PositionBefore.IsNegative() {
		held = "short"
	}
	opened := "long"
	if o.EntrySide() == "sell" {
		opened = "short"
	}
	return fmt.Sprintf("the %s position was a %s of %s before the entry: its %s of %s only reduced it and opened no %s position for the %s to protect",
		VenueSymbol(o.Symbol), held, was, o.EntrySide(), filled, opened, o.Exit)
}

// ExitTarget is the exit order o's target (its Exit role's attached field);
// nil when o is not an exit.
func (o Order) ExitTarget() *Attached {
	switch o.Exit {
	case RoleTakeProfit:
		return o.TakeProfit
	case RoleStopLoss:
		return o.StopLoss
	case RoleTrailingStop:
		return o.TrailingStop
	}
	return nil
}

// TrailingLegAttacher is implemented by a venue that takes a take-profit
// and a stop-loss on the entry order itself but a trailing stop only once
// the entry filled, by a second request (Bybit linear: the position's
// trailingStop setting, POST /v5/position/trading-stop; OKX swaps: a
// move_order_stop algo order, POST /api/v5/trade/order-algo): the gateway moves
// the trailing stop alone into a leg (PlanTrailingLeg), and the venue's
// Place and Lookup of an order with Exit RoleTrailingStop set and read
// that setting.
type TrailingLegAttacher interface {
	TrailsAsLeg() bool
}

// TrailsAsLeg reports whether v takes a trailing stop as a leg while
// keeping take-profit and stop-loss on the entry (see TrailingLegAttacher).
func TrailsAsLeg(v Venue) bool {
	ta, ok := v.(TrailingLegAttacher)
	return ok && ta.TrailsAsLeg()
}

// SettingExiter is implemented by a venue where some exits are not
// orders but a setting of the position (Bybit linear: the trailingStop of
// POST /v5/position/trading-stop): such an exit has no ID of its own at
// the venue, so a lookup finds "a" setting, which may be a later entry's
// as well as this leg's. Whoever acts on it at the venue on a leg's behalf
// must first make sure no later leg can own it (a cancel clears it under
// the symbol's setting lock, db.LockPositionSetting).
type SettingExiter interface {
	ExitIsSetting(o Order) bool
}

// ExitIsSetting reports whether o, an exit, is a setting of the position
// at v rather than an order of its own (see SettingExiter).
func ExitIsSetting(v Venue, o Order) bool {
	se, ok := v.(SettingExiter)
	return ok && o.Exit != "" && se.ExitIsSetting(o)
}

// PlanTrailingLeg moves o's trailing stop, and only it, into a leg as
// PlanExitLegs would (a reduce-only exit on the opposite side, Exit
// RoleTrailingStop, its target as asked: a percent is resolved from the
// fill when the leg is first sent), under partID(len(o.Legs)+1); the
// take-profit and stop-loss stay on o for the venue to set on the entry.
func PlanTrailingLeg(o Order, partID func(i int) string) Order {
	if o.TrailingStop == nil {
		return o
	}
	only := o
	only.TakeProfit, only.StopLoss = nil, nil
	o.TrailingStop, o.Legs = nil, PlanExitLegs(only, partID).Legs
	return o
}
