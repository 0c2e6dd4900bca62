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

// needsSizing reports whether sig's quantity is not a base quantity: the
// venue must resolve it to one before the intent is written.
func needsSizing(sig signal.Signal) bool {
	return sig.QuantityType != "" && sig.QuantityType != signal.QuantityBase
}

// sizedByVenue reports whether order's size is resolved before its intent
// from what the venue (and, on spot, the strategy's ledger) holds: a sized
// signal, or any close on spot, which sells what the strategy bought
// through hoox rather than the coin's whole free balance.
func sizedByVenue(sig signal.Signal, order exchange.Order) bool {
	return needsSizing(sig) || spotClose(sig, order)
}

// spotClose reports whether order closes on a spot venue.
func spotClose(sig signal.Signal, order exchange.Order) bool {
	return order.Ledger != nil && exchange.IsClose(sig.Action)
}

// quantityType is how order's size is resolved: the signal's type, or for
// a spot close given as a base quantity, all (100 %) of the position —
// which on spot is what the strategy holds through hoox.
func quantityType(sig signal.Signal, order exchange.Order) (string, exchange.Order) {
	if spotClose(sig, order) && !needsSizing(sig) {
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
		s.venueError(ctx, in.Signal.Exchange, err)
		return unavailable(fmt.Sprintf("venue %s could not be asked about %s; nothing was placed", in.Signal.Exchange, order.Symbol), 5*time.Second, err)
	}
	if spot {
		order.Ledger = &exchange.Ledger{Strategy: in.Signal.Strategy, Symbol: symbol, BaseAsset: base}
	}
	return nil
}

// readLedger takes the spot close's lock on the strategy's ledger entry
// and reads it into facts, in the claim's transaction: a second close of
// the same holding waits until this one's fill is recorded.
func (s *Service) readLedger(ctx context.Context, tx *db.ClaimTx, in Input, order exchange.Order, facts *exchange.SizingFacts) error {
	k := db.LedgerKey{Exchange: in.Signal.Exchange, Mode: in.Trace.Mode, Symbol: order.Ledger.Symbol, Strategy: order.Ledger.Strategy}
	held, err := db.LockLedger(ctx, tx.Tx(), k)
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		return unavailable(fmt.Sprintf("another close of strategy %q's %s is still in flight; nothing was placed, retry", k.Strategy, k.Symbol), 5*time.Second, err)
	case err != nil:
		return unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	facts.Ledger, facts.Unrecorded, facts.BaseAsset = decimal.NewNullDecimal(held.Quantity), held.Unrecorded, order.Ledger.BaseAsset
	return nil
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

// size resolves a sized signal's order (or a spot close's, from what the
// strategy holds in the spot ledger) once, under the trace's claim and
// before its intent: the venue's facts (price, balance, position, lot) are
// read, the size computed and rounded down, and the facts go with the
// order (Order.Sizing) into the intent and every audit event that records
// it. A size that rounds to nothing or below the venue's minimum settles
// the trace rejected without writing an intent or sending anything (done,
// with the 422); after a read that fails the claim rolls back (done, with
// the 503): nothing was sent either way.
func (s *Service) size(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, order exchange.Order, out *Outcome) (exchange.Order, bool, error) {
	sig, tr := in.Signal, in.Trace
	sizer, ok := venue.(exchange.Sizer) // canSize checked it for a sized signal
	if !ok {
		return order, true, invalid(signal.FieldAction, fmt.Sprintf("venue %q cannot read what the account holds to size a close", sig.Exchange))
	}
	qtype, asked := quantityType(sig, order)
	need := exchange.Need(qtype, asked)
	var facts exchange.SizingFacts
	if need.Position && order.Ledger != nil {
		// Before the venue's balance: the free balance read after the
		// lock already reflects a close that went before.
		if err := s.readLedger(ctx, tx, in, order, &facts); err != nil {
			return order, true, err
		}
	}
	vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
	read, err := sizer.SizingFacts(vctx, asked, need)
	cancel()
	if err != nil {
		s.venueError(ctx, sig.Exchange, err)
		return order, true, unavailable(fmt.Sprintf("venue %s could not be asked what to size the order by; nothing was placed", sig.Exchange), 5*time.Second, err)
	}
	read.Ledger, read.Unrecorded, read.BaseAsset = facts.Ledger, facts.Unrecorded, facts.BaseAsset
	resolved, sizing, reason := exchange.Resolve(qtype, asked, read)
	if reason == "" {
		return resolved, false, nil
	}
	ev := db.Event{TraceID: tr.ID, Event: db.EventRejected, SourceIP: in.SourceIP,
		Detail: map[string]any{"reason": reason, "sizing": sizing, "sent": false}}
	if err := s.notify(ctx, tx, in, order, ev); err != nil {
		return order, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	if err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: db.TraceRejected, Events: []db.Event{ev}}); err != nil {
		return order, true, unavailable("the database is unavailable; nothing was placed", 5*time.Second, err)
	}
	out.Status = db.TraceRejected
	return order, true, &Error{Code: codes.OrderRejected, Outcome: out,
		Detail: fmt.Sprintf("the order was not sent to %s: %s", sig.Exchange, reason)}
}
