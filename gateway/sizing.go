package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

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

// spotClose reports whether order closes on a spot venue.
func spotClose(sig signal.Signal, order exchange.Order) bool {
	return order.Ledger != nil && exchange.IsClose(sig.Action)
}

// quantityType is how order's size is resolved: the signal's type, or for
// a spot close given as a base quantity, all (100 %) of the position —
// which on spot is what the strategy holds through hoox.
func quantityType(sig signal.Signal, order exchange.Order) (string, exchange.Order) {
	if spotClose(sig, order) && !sizedQuantity(sig) {
		order.Quantity = decimal.NewFromInt(100)
		return exchange.QuantityPercentOfPosition, order
	}
	return sig.QuantityType, order
}

// tagLedger marks an order on a spot venue for the strategy's spot ledger
// (Order.Ledger): its fills count there, and a close sells from there.
func (s *Service) tagLedger(ctx context.Context, venue exchange.Venue, in Input, order *exchange.Order) error {
	st, ok := venue.(exchange.SpotTrader)
	if !ok {
		return nil
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	symbol, base, spot, err := st.SpotSymbol(vctx, order.Symbol)
	cancel()
	if err != nil {
		s.venueError(ctx, in.Signal.Exchange, in.Signal.Test, err)
		return unavailable(fmt.Sprintf("venue %s could not be asked about %s; nothing was placed", in.Signal.Exchange, order.Symbol), 5*time.Second, err)
	}
	if spot {
		order.Ledger = &exchange.Ledger{Strategy: in.Signal.Strategy, Symbol: symbol, BaseAsset: base}
	}
	return nil
}

// readLedger takes the spot close's lock on the strategy's ledger entry
// and reads it into facts, in the claim's transaction: a second close of
// the same holding waits until this one's fill is recorded. It returns
// the entry's version, which the close's intent must still find
// (db.Intent.Ledger): the lock is lost with the claim's session.
func (s *Service) readLedger(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, facts *exchange.SizingFacts) (*db.LedgerVersion, error) {
	k := db.LedgerKey{Exchange: in.Signal.Exchange, Mode: in.Trace.Mode, Symbol: order.Ledger.Symbol, Strategy: order.Ledger.Strategy}
	held, err := db.LockLedger(ctx, tx.Tx(), k)
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		return nil, unavailable(fmt.Sprintf("another close of strategy %q's %s is still in flight; nothing was placed, retry", k.Strategy, k.Symbol), 5*time.Second, err)
	case err != nil:
		return nil, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	facts.Ledger, facts.Unrecorded, facts.BaseAsset = decimal.NewNullDecimal(held.Quantity), held.Unrecorded, order.Ledger.BaseAsset
	return &db.LedgerVersion{LedgerKey: k, Closes: held.Closes}, nil
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
// its intent — sized (needsSizing), a close on spot (sold from what the
// strategy holds in the spot ledger, see spotClose) or, for a close on a
// venue that refuses market orders above a maximum
// (exchange.SplitsCloses), planned as one or several parts — so every
// recovery path must re-use the order stored in the intent rather than
// rebuild it from the signal.
func (s *Service) plans(sig signal.Signal, venue exchange.Venue, order exchange.Order) bool {
	return needsSizing(sig) || spotClose(sig, order) || (exchange.IsClose(sig.Action) && exchange.SplitsCloses(venue)) ||
		(sig.HasAttachments() && exchange.AttachesAsLegs(venue)) || (sig.TrailingStop != nil && exchange.TrailsAsLeg(venue))
}

// plan resolves the order once, under the trace's claim and before its
// intent: sizing (see size; a spot close is sized from the strategy's
// ledger), then for a close on a venue that needs it, the split into parts
// of at most the venue's maximum market quantity, computed from the
// position read here (the facts sizing read, or one read for a full
// close). done reports that the attempt ended (refused or the venue could
// not be asked; nothing was sent). read is the spot ledger's version a
// spot close was sized under (nil for every other order), for its intent.
func (s *Service) plan(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (_ exchange.Order, read *db.LedgerVersion, done bool, _ error) {
	sig := in.Signal
	var facts exchange.SizingFacts
	sized := needsSizing(sig) || spotClose(sig, order)
	if sized {
		var err error
		if order, facts, read, done, err = s.size(ctx, tx, in, venue, order, out); done {
			return order, nil, true, err
		}
	}
	if exchange.AttachesAsLegs(venue) && order.HasAttachments() {
		// The cap count does not depend on the position: it is asked
		// beside the position read, not after it (one venue round trip
		// instead of two), and dropped when the entry turns out to
		// place no exit.
		caps, stopCaps := s.startExitCaps(ctx, venue, order)
		defer stopCaps()
		var err error
		if order, done, err = s.readPositionBefore(ctx, in, venue, order); done {
			return order, nil, true, err
		}
		if before := order.PositionBefore; before == nil || exchange.OpenedBy(order.Side, *before, order.Quantity).IsPositive() {
			// An entry that can only reduce the position places no
			// exit (see readPositionBefore): neither the symbol's rules
			// nor its cap on resting exits stand in its way.
			if done, err := s.checkExits(ctx, tx, in, venue, order, out); done {
				return order, nil, true, err
			}
			if order, done, err = s.checkExitCaps(ctx, tx, in, order, out, caps); done {
				return order, nil, true, err
			}
		}
		// Separate exit orders, placed once the entry filled (percent
		// targets resolved from its fill price then).
		legID := func(i int) string { return signal.LegClientOrderID(order.ClientOrderID, i) }
		if exchange.ExitsAsOneList(venue) {
			return exchange.PlanSellExits(order, legID), read, false, nil
		}
		return exchange.PlanExitLegs(order, legID), read, false, nil
	}
	if exchange.TrailsAsLeg(venue) && order.TrailingStop != nil {
		// The trailing stop alone is set after the fill (a percent from
		// the fill price); take-profit and stop-loss ride on the entry.
		order, done, err := s.readPositionBefore(ctx, in, venue, order)
		if done {
			return order, nil, true, err
		}
		legID := func(i int) string { return signal.LegClientOrderID(order.ClientOrderID, i) }
		return exchange.PlanTrailingLeg(order, legID), read, false, nil
	}
	if !exchange.IsClose(sig.Action) || !exchange.SplitsCloses(venue) {
		return order, read, false, nil
	}
	if !sized {
		vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
		f, err := venue.(exchange.Sizer).SizingFacts(vctx, order, exchange.SizingNeed{Position: true})
		cancel()
		if err != nil {
			s.venueError(ctx, sig.Exchange, sig.Test, err)
			return order, nil, true, unavailable(fmt.Sprintf("venue %s could not be asked for the position to close; nothing was placed", sig.Exchange), 5*time.Second, err)
		}
		facts = f
	}
	// A spot close sized from the ledger is a partial close (Partial) of
	// at most the free balance (facts.Position): split that size.
	split, _ := exchange.SplitClose(order, facts, func(i int) string { return signal.LegClientOrderID(order.ClientOrderID, i) })
	return split, read, false, nil
}

// size resolves a sized signal's order (or a spot close's, from what the
// strategy holds in the spot ledger) once, under the trace's claim and
// before its intent: the venue's facts (price, balance, position, lot) are
// read, the size computed and rounded down, and the facts go with the
// order (Order.Sizing) into the intent and every audit event that records
// it. A size that rounds to nothing or below the venue's minimum settles
// the trace rejected without writing an intent or sending anything (done,
// with the 422); after a read that fails the claim rolls back (done, with
// the 503): nothing was sent either way. read is the ledger's version a
// spot close read (readLedger), nil for every other order.
func (s *Service) size(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (_ exchange.Order, _ exchange.SizingFacts, read *db.LedgerVersion, done bool, _ error) {
	sig := in.Signal
	sizer, ok := venue.(exchange.Sizer) // canSize checked it for a sized signal
	if !ok {
		return order, exchange.SizingFacts{}, nil, true, invalid(signal.FieldAction, fmt.Sprintf("venue %q cannot read what the account holds to size a close", sig.Exchange))
	}
	qtype, asked := quantityType(sig, order)
	sizeQuantity := sizedQuantity(sig) || spotClose(sig, order)
	need := exchange.Need(qtype, asked)
	legExits, trailLeg := exchange.AttachesAsLegs(venue), exchange.TrailsAsLeg(venue)
	if percentOnEntry(sig, trailLeg) && order.OrderType != signal.OrderTypeLimit && !legExits {
		need.Price = true
	}
	var held exchange.SizingFacts
	if need.Position && spotClose(sig, order) {
		// Before the venue's balance: the free balance read after the
		// lock already reflects a close that went before. (A spot sell
		// sized percent_of_balance reads the free base balance too, but
		// sells from the account, not from the strategy's ledger.)
		var err error
		if read, err = s.readLedger(ctx, tx, in, order, &held); err != nil {
			return order, held, nil, true, err
		}
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	facts, err := sizer.SizingFacts(vctx, asked, need)
	cancel()
	if err != nil {
		s.venueError(ctx, sig.Exchange, sig.Test, err)
		return order, facts, nil, true, unavailable(fmt.Sprintf("venue %s could not be asked what to size the order by; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	facts.Ledger, facts.Unrecorded, facts.BaseAsset = held.Ledger, held.Unrecorded, held.BaseAsset
	resolved, reason := order, facts.Refused
	var sizing exchange.Sizing
	if sizeQuantity {
		resolved, sizing, reason = exchange.Resolve(qtype, asked, facts)
	}
	if reason == "" && !legExits {
		// A venue taking exits as legs resolves them from the entry's
		// fill price instead (jobs.LegRunner).
		trailing := resolved.TrailingStop
		if trailLeg {
			// Resolved from the fill by the leg runner, like legExits.
			resolved.TrailingStop = nil
		}
		resolved, reason = resolveTargets(resolved, facts)
		if trailLeg {
			resolved.TrailingStop = trailing
		}
	}
	if reason == "" {
		return resolved, facts, read, false, nil
	}
	detail := map[string]any{"reason": reason, "sent": false}
	if sizeQuantity {
		detail["sizing"] = sizing
	}
	return order, facts, nil, true, s.rejectUnsent(ctx, tx, in, order, out, reason, detail)
}

// rejectUnsent settles the trace rejected before its intent, nothing sent
// (a size that rounds to nothing, exits the symbol refuses or the venue's
// cap cannot take), and returns the 422 order_rejected; or the 503 when
// the database cannot record it.
func (s *Service) rejectUnsent(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, reason string, detail map[string]any) error {
	ev := db.Event{TraceID: in.Trace.ID, Event: db.EventRejected, SourceIP: in.SourceIP, Detail: detail}
	if err := s.notify(ctx, tx, in, order, ev); err != nil {
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if err := tx.Record(ctx, db.Settlement{TraceID: in.Trace.ID, Status: db.TraceRejected, Events: []db.Event{ev}}); err != nil {
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	out.Status = db.TraceRejected
	return &Error{Code: codes.OrderRejected, Outcome: out,
		Detail: fmt.Sprintf("the order was not sent to %s: %s", in.Signal.Exchange, reason)}
}

// checkExits asks a venue that can tell (exchange.ExitChecker) whether the
// symbol's rules would refuse the exits once the entry filled; if so the
// trace settles rejected before its intent (422 order_rejected, nothing
// sent), as a size that rounds to nothing does: an entry placed without
// the exit asked for is worse than none. done reports that the attempt
// ended.
func (s *Service) checkExits(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (bool, error) {
	checker, ok := venue.(exchange.ExitChecker)
	if !ok {
		return false, nil
	}
	sig := in.Signal
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	reason, err := checker.CheckExits(vctx, order)
	cancel()
	if err != nil {
		s.venueError(ctx, sig.Exchange, sig.Test, err)
		return true, unavailable(fmt.Sprintf("venue %s could not be asked for the symbol's rules; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	if reason == "" {
		return false, nil
	}
	return true, s.rejectUnsent(ctx, tx, in, order, out, reason, map[string]any{"reason": reason, "sent": false})
}

// readPositionBefore reads, for a derivatives entry whose exits go as
// their own reduce-only orders once it filled, the position the venue
// holds on the symbol before the intent, and records it on the order
// (Order.PositionBefore): the exits will cover only what the entry opened
// or added on its side, so a strategy's exit sent through an entry
// template (a sell of the long it holds) places none. Spot (the order
// counts in the spot ledger) has no position to reduce, and a venue that
// cannot size says nothing: the order goes as it is. done reports that
// the attempt ended; a venue that cannot be asked rolls the claim back
// (503), nothing placed.
func (s *Service) readPositionBefore(ctx context.Context, in Input, venue exchange.Venue, order exchange.Order) (exchange.Order, bool, error) {
	sizer, ok := venue.(exchange.Sizer)
	if !ok || order.Ledger != nil {
		return order, false, nil
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	facts, err := sizer.SizingFacts(vctx, order, exchange.SizingNeed{Position: true})
	cancel()
	if err != nil {
		s.venueError(ctx, in.Signal.Exchange, in.Signal.Test, err)
		return order, true, unavailable(fmt.Sprintf("venue %s could not be asked for the %s position the exits would protect; nothing was placed", in.Signal.Exchange, order.Symbol), 5*time.Second, err)
	}
	before := facts.Position
	order.PositionBefore = &before
	return order, false, nil
}

// exitCapsRead is the answer to one ExitCaps read.
type exitCapsRead struct {
	caps []exchange.ExitCap
	err  error
}

// startExitCaps starts reading, on a venue that caps the exit orders
// resting per symbol (exchange.ExitCapper), the caps for order's exits,
// and returns where the answer will arrive (nil on any other venue) and
// stop, which the caller must call once it no longer needs the answer:
// it cancels a read still under way, so a plan that ends early (the
// position could not be read, or the entry places no exit) leaves nothing
// running. The read is only a count of what rests at the venue; it sends
// nothing.
func (s *Service) startExitCaps(ctx context.Context, venue exchange.Venue, order exchange.Order) (<-chan exitCapsRead, func()) {
	capper, ok := venue.(exchange.ExitCapper)
	if !ok {
		return nil, func() {}
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	read := make(chan exitCapsRead, 1) // never blocks the reader
	go func() {
		caps, err := capper.ExitCaps(vctx, order)
		read <- exitCapsRead{caps: caps, err: err}
	}()
	return read, cancel
}

// checkExitCaps decides, on a venue that caps the exit orders resting per
// symbol (exchange.ExitCapper), from the count startExitCaps read, whether
// the entry's exits still fit, before its intent. If they do not, the venue would refuse an exit only after the
// entry filled — a position without the stop-loss asked for — so the trace
// settles rejected instead (422 order_rejected, nothing sent), as a size
// that rounds to nothing does. Otherwise the caps read go with the order
// (Order.ExitCaps) into its intent and audit events. done reports that the
// attempt ended; a venue that cannot be asked rolls the claim back (503).
//
// read is the answer startExitCaps began asking for (nil on a venue with
// no caps).
func (s *Service) checkExitCaps(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, out *Outcome, read <-chan exitCapsRead) (exchange.Order, bool, error) {
	if read == nil {
		return order, false, nil
	}
	sig := in.Signal
	r := <-read // the read is bounded by the venue timeout
	caps, err := r.caps, r.err
	if err != nil {
		s.venueError(ctx, sig.Exchange, sig.Test, err)
		return order, true, unavailable(fmt.Sprintf("venue %s could not be asked how many exit orders rest on %s; nothing was placed", sig.Exchange, order.Symbol), 5*time.Second, err)
	}
	if len(caps) == 0 {
		return order, false, nil
	}
	for i, c := range caps {
		if !c.EachExit {
			continue
		}
		// The venue counts what rests there now; hoox's own exits not
		// sent yet (legs to send, a resting limit entry's exits) will
		// rest there too.
		symbol := ""
		if !c.AllSymbols {
			symbol = order.Symbol
		}
		if caps[i].Planned, err = db.PlannedExits(ctx, tx.Tx(), sig.Exchange, in.Trace.Mode, symbol); err != nil {
			return order, true, err
		}
	}
	order.ExitCaps = caps
	for _, c := range caps {
		if !c.Fits() {
			reason := c.Refusal()
			return order, true, s.rejectUnsent(ctx, tx, in, order, out, reason, map[string]any{"reason": reason, "sent": false, "exit_caps": caps})
		}
	}
	return order, false, nil
}
