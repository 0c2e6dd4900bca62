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

// needsSizing reports whether sig's quantity is not a base quantity: the
// venue must resolve it to one before the intent is written.
func needsSizing(sig signal.Signal) bool {
	return sig.QuantityType != "" && sig.QuantityType != signal.QuantityBase
}

// canSize refuses, before anything is claimed, a sized signal for a venue
// that cannot read what sizing it needs (400: nothing changed).
func canSize(sig signal.Signal, venue exchange.Venue) error {
	if !needsSizing(sig) {
		return nil
	}
	sizer, ok := venue.(exchange.Sizer)
	if !ok {
		return invalid(signal.FieldQuantityType, fmt.Sprintf("%s needs the venue's price, balance or position, and venue %q cannot read them; send a base quantity", sig.QuantityType, sig.Exchange))
	}
	if sig.QuantityType == signal.QuantityPercentOfBalance && !sizer.ReadsBalance() {
		return invalid(signal.FieldQuantityType, fmt.Sprintf("percent_of_balance needs a free balance, and venue %q keeps none; send a base or quote quantity", sig.Exchange))
	}
	return nil
}

// size resolves a sized signal's order once, under the trace's claim and
// before its intent: the venue's facts (price, balance, position, lot) are
// read, the size computed and rounded down, and the facts go with the
// order (Order.Sizing) into the intent and every audit event that records
// it. A size that rounds to nothing or below the venue's minimum settles
// the trace rejected without writing an intent or sending anything (done,
// with the 422); a read that fails rolls the claim back (done, with the
// 503): nothing was sent either way.
func (s *Service) size(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (exchange.Order, bool, error) {
	sig, tr := in.Signal, in.Trace
	sizer := venue.(exchange.Sizer) // canSize checked it
	vctx, cancel := context.WithTimeout(ctx, s.cfg.VenueTimeout)
	facts, err := sizer.SizingFacts(vctx, order, exchange.Need(sig.QuantityType, order))
	cancel()
	if err != nil {
		tx.Rollback(ctx)
		s.venueError(ctx, sig.Exchange, err)
		return order, true, unavailable(fmt.Sprintf("venue %s could not be asked what to size the order by; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	resolved, sizing, reason := exchange.Resolve(sig.QuantityType, order, facts)
	if reason == "" {
		return resolved, false, nil
	}
	ev := db.Event{TraceID: tr.ID, Event: db.EventRejected, SourceIP: in.SourceIP,
		Detail: map[string]any{"reason": reason, "sizing": sizing, "sent": false}}
	if err := s.notify(ctx, tx, in, order, ev); err != nil {
		tx.Rollback(ctx)
		return order, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: db.TraceRejected, Events: []db.Event{ev}}); err != nil {
		return order, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	out.Status = db.TraceRejected
	return order, true, &Error{Code: codes.OrderRejected, Outcome: out,
		Detail: fmt.Sprintf("the order was not sent to %s: %s", sig.Exchange, reason)}
}
