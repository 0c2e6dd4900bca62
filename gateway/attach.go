package gateway

import (
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// attachedOf carries a signal's attached-exit target into the order.
func attachedOf(t *signal.Target) *exchange.Attached {
	if t == nil {
		return nil
	}
	return &exchange.Attached{Price: t.Price, Percent: t.Percent, Distance: t.Distance}
}

// withAttachments sets o's attached exits from sig, as asked: percent
// targets are resolved later, once, before the intent (see size).
func withAttachments(o exchange.Order, sig signal.Signal) exchange.Order {
	o.TakeProfit = attachedOf(sig.TakeProfit)
	o.StopLoss = attachedOf(sig.StopLoss)
	o.TrailingStop = attachedOf(sig.TrailingStop)
	return o
}

// canAttach refuses, before anything is claimed, a signal whose attached
// exits the venue cannot take (422 unsupported: nothing changed). The
// venue decides through exchange.AttachmentCapable; one that does not
// implement it takes none.
func canAttach(sig signal.Signal, venue exchange.Venue) error {
	if !sig.HasAttachments() {
		return nil
	}
	o := withAttachments(exchange.Order{Symbol: sig.Symbol, Action: sig.Action, Side: sig.Side,
		OrderType: sig.OrderType, Quantity: sig.Quantity, Price: sig.Price, Test: sig.Test}, sig)
	if reason := exchange.RefuseAttachments(venue, sig.Exchange, o); reason != "" {
		return &Error{Code: codes.Unsupported, Detail: reason}
	}
	return nil
}

// hasPercentTarget reports whether sig has a take-profit or stop-loss (or
// trailing stop) given as a percentage: its price is resolved once, when
// the order is sized.
func hasPercentTarget(sig signal.Signal) bool {
	for _, t := range []*signal.Target{sig.TakeProfit, sig.StopLoss, sig.TrailingStop} {
		if t != nil && t.Percent.Valid {
			return true
		}
	}
	return false
}

// percentOnEntry reports whether sig has a percent target resolved before
// the intent from the venue's price: any percent target, except a trailing
// stop the venue sets as a leg (trailLeg: resolved from the fill then).
func percentOnEntry(sig signal.Signal, trailLeg bool) bool {
	for _, t := range []*signal.Target{sig.TakeProfit, sig.StopLoss} {
		if t != nil && t.Percent.Valid {
			return true
		}
	}
	return !trailLeg && sig.TrailingStop != nil && sig.TrailingStop.Percent.Valid
}

// resolveTargets turns o's percent targets into prices, once, before the
// intent: from the limit price for a limit entry, else from the venue's
// last price read now (facts.Price) — the nearest known price to the
// market entry's fill — rounded to the venue's tick toward the entry
// (exchange.Attached.Resolve). A target that cannot be resolved (a
// percentage smaller than a tick) is the reason the order is not sent.
func resolveTargets(o exchange.Order, facts exchange.SizingFacts) (exchange.Order, string) {
	ref := facts.Price
	if o.OrderType == signal.OrderTypeLimit && o.Price.Valid {
		ref = o.Price.Decimal
	}
	for _, r := range o.Attachments() {
		if !r.Attached.Percent.Valid {
			continue
		}
		a, err := r.Attached.Resolve(r.Role, o.Side, ref, facts.Tick)
		if err != nil {
			return o, err.Error()
		}
		switch r.Role {
		case exchange.RoleTakeProfit:
			o.TakeProfit = &a
		case exchange.RoleStopLoss:
			o.StopLoss = &a
		default:
			o.TrailingStop = &a
		}
	}
	return o, ""
}
