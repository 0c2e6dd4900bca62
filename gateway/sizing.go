package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// needsSizing reports whether sig's order must be resolved by the venue
// before the intent is written: a quantity that is not a base quantity, or
// an attached exit given as a percentage (its price is taken from a price
// read then). The resolved order goes into the intent, and every recovery
// path re-uses it.
func needsSizing(sig signal.Signal) bool {
	return sizedQuantity(sig) || hasPercentTarget(sig)
}

// sizedQuantity reports whether sig's quantity is not a base quantity.
func sizedQuantity(sig signal.Signal) bool {
	return sig.QuantityType != "" && sig.QuantityType != signal.QuantityBase
}

// canSize refuses, before anything is claimed, a sized signal for a venue
// that cannot read what sizing it needs (400: nothing changed).
func canSize(sig signal.Signal, venue exchange.Venue) error {
	if !needsSizing(sig) {
		return nil
	}
	sizer, ok := venue.(exchange.Sizer)
	if !ok && !sizedQuantity(sig) {
		return &Error{Code: codes.Unsupported, Detail: fmt.Sprintf("a take_profit or stop_loss in percent needs the venue's price, and venue %q cannot read it; send it as a price", sig.Exchange)}
	}
	if !ok {
		return invalid(signal.FieldQuantityType, fmt.Sprintf("%s needs the venue's price, balance or position, and venue %q cannot read them; send a base quantity", sig.QuantityType, sig.Exchange))
	}
	if sig.QuantityType == signal.QuantityPercentOfBalance && !sizer.ReadsBalance() {
		return invalid(signal.FieldQuantityType, fmt.Sprintf("percent_of_balance needs a free balance, and venue %q keeps none; send a base or quote quantity", sig.Exchange))
	}
	return nil
}

// plans reports whether sig's order is resolved against the venue before
// its intent — sized (needsSizing) or, for a close on a venue that refuses
// market orders above a maximum (exchange.SplitsCloses), planned as one or
// several parts — so every recovery path must re-use the order stored in
// the intent rather than rebuild it from the signal.
func (s *Service) plans(sig signal.Signal, venue exchange.Venue) bool {
	return needsSizing(sig) || (exchange.IsClose(sig.Action) && exchange.SplitsCloses(venue)) ||
		(sig.HasAttachments() && exchange.AttachesAsLegs(venue))
}

// plan resolves the order once, under the trace's claim and before its
// intent: sizing (see size), then for a close on a venue that needs it,
// the split into parts of at most the venue's maximum market quantity,
// computed from the position read here (the facts sizing read, or one
// read for a full close). done reports that the attempt ended (refused
// or the venue could not be asked; nothing was sent).
func (s *Service) plan(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (exchange.Order, bool, error) {
	sig := in.Signal
	var facts exchange.SizingFacts
	if needsSizing(sig) {
		var done bool
		var err error
		if order, facts, done, err = s.size(ctx, tx, in, venue, order, out); done {
			return order, true, err
		}
	}
	if exchange.AttachesAsLegs(venue) && order.HasAttachments() {
		// Separate exit orders, placed once the entry filled (percent
		// targets resolved from its fill price then).
		return exchange.PlanExitLegs(order, func(i int) string { return signal.LegClientOrderID(order.ClientOrderID, i) }), false, nil
	}
	if !exchange.IsClose(sig.Action) || !exchange.SplitsCloses(venue) {
		return order, false, nil
	}
	if !needsSizing(sig) {
		vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
		f, err := venue.(exchange.Sizer).SizingFacts(vctx, order, exchange.SizingNeed{Position: true})
		cancel()
		if err != nil {
			s.venueError(ctx, sig.Exchange, err)
			return order, true, unavailable(fmt.Sprintf("venue %s could not be asked for the position to close; nothing was placed", sig.Exchange), 5*time.Second, err)
		}
		facts = f
	}
	split, _ := exchange.SplitClose(order, facts, func(i int) string { return signal.LegClientOrderID(order.ClientOrderID, i) })
	return split, false, nil
}

// size resolves a sized signal's order once, under the trace's claim and
// before its intent: the venue's facts (price, balance, position, lot) are
// read, the size computed and rounded down, and the facts go with the
// order (Order.Sizing) into the intent and every audit event that records
// it. A size that rounds to nothing or below the venue's minimum settles
// the trace rejected without writing an intent or sending anything (done,
// with the 422); after a read that fails the claim rolls back (done, with
// the 503): nothing was sent either way.
func (s *Service) size(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (exchange.Order, exchange.SizingFacts, bool, error) {
	sig, tr := in.Signal, in.Trace
	sizer := venue.(exchange.Sizer) // canSize checked it
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	need := exchange.Need(sig.QuantityType, order)
	legExits := exchange.AttachesAsLegs(venue)
	if hasPercentTarget(sig) && order.OrderType != signal.OrderTypeLimit && !legExits {
		need.Price = true
	}
	facts, err := sizer.SizingFacts(vctx, order, need)
	cancel()
	if err != nil {
		s.venueError(ctx, sig.Exchange, err)
		return order, facts, true, unavailable(fmt.Sprintf("venue %s could not be asked what to size the order by; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	resolved, reason := order, facts.Refused
	var sizing exchange.Sizing
	if sizedQuantity(sig) {
		resolved, sizing, reason = exchange.Resolve(sig.QuantityType, order, facts)
	}
	if reason == "" && !legExits {
		// A venue taking exits as legs resolves them from the entry's
		// fill price instead (jobs.LegRunner).
		resolved, reason = resolveTargets(resolved, facts)
	}
	if reason == "" {
		return resolved, facts, false, nil
	}
	detail := map[string]any{"reason": reason, "sent": false}
	if sizedQuantity(sig) {
		detail["sizing"] = sizing
	}
	ev := db.Event{TraceID: tr.ID, Event: db.EventRejected, SourceIP: in.SourceIP, Detail: detail}
	if err := s.notify(ctx, tx, in, order, ev); err != nil {
		return order, facts, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: db.TraceRejected, Events: []db.Event{ev}}); err != nil {
		return order, facts, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	out.Status = db.TraceRejected
	return order, facts, true, &Error{Code: codes.OrderRejected, Outcome: out,
		Detail: fmt.Sprintf("the order was not sent to %s: %s", sig.Exchange, reason)}
}
