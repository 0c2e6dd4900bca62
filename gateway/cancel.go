package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// canCancel refuses, before anything is claimed, a cancel signal for a
// venue that cannot cancel (400: nothing changed).
func canCancel(sig signal.Signal, venue exchange.Venue) error {
	if sig.Action != signal.ActionCancel {
		return nil
	}
	if _, ok := venue.(exchange.Canceler); !ok {
		return invalid(signal.FieldAction, fmt.Sprintf("cancel is not supported on venue %q yet", sig.Exchange))
	}
	return nil
}

// cancelOrders executes a claimed cancel signal: every open order hoox
// recorded for the signal's symbol at its venue and mode — only its
// strategy's when it names one (cancelTakes) — is cancelled at the venue
// by its client order ID, and recorded — its row cancelled (or filled,
// expired: whatever the venue says it became), an audit event on its own
// trace — in the claim's commit, with the cancel's trace dispatched and an
// event listing what it cancelled. The rows stay locked across the venue
// calls, so a follow job never records one change twice. Exit legs of the
// symbol's entries (the strategy's) that no pass has sent yet are settled
// not_placed in the same commit (db.DropUnsentExitLegs) and named in that
// event (exits_not_placed), not in the answer's cancelled list: they are
// no orders. A cancel leaves none of the hoox orders it is for resting,
// and the sweeper would place them after it. Exit legs that may have been sent
// but are not recorded (armed, or failed with their order unknown) are
// marked (db.MarkCancelledExitLegs, named as exits_to_cancel): never sent
// again, and cancelled by the leg runner if the venue shows them. A marked
// exit that is a setting of the position (a Bybit trailing stop, which
// carries no ID) is cleared by the cancel itself and settled in its commit
// (clearMarkedSettings, named as exits_cleared), under the position's
// setting lock: later, a leg runner could take a later entry's setting for
// it. A cancel naming a strategy keeps such a setting when another
// strategy's exit shares it (sharedSettings, named as
// exits_kept_position).
//
// A venue failure (or a crash) part-way rolls everything back: the orders
// already cancelled at the venue stay cancelled there, and the sender's
// retry (a 503 asks for it) cancels the rest and records all of them —
// cancelling is idempotent at every venue, an order already cancelled is
// reported as it is. Meanwhile their follow jobs may record them cancelled
// on their own; each change is recorded once either way.
func (s *Service) cancelOrders(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue, res db.ClaimResult) (*Outcome, error) {
	ctx, cancelAll := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.Timing.VenueTimeout+30*time.Second)
	defer cancelAll()
	sig, tr := in.Signal, in.Trace
	canceler := venue.(exchange.Canceler)
	// Exit legs that may rest at the venue or still be sent — armed, or
	// failed with their order unknown (given up during an outage: the
	// sweeper would open and send it once the venue answers) — are marked
	// first, under their traces' locks: none is sent again, and the leg
	// runner cancels one it finds. Before LockOpenOrders, so an exit a
	// pass was placing meanwhile is recorded open by then and cancelled
	// below.
	// A setting of the position another strategy's exit shares is kept
	// (sharedSettings): neither marked nor cleared.
	shared, err := s.sharedSettings(ctx, tx, in, venue)
	if err != nil {
		return nil, unavailable("the database is unavailable; nothing was cancelled", 5*time.Second, err)
	}
	marked, err := db.MarkCancelledExitLegs(ctx, tx.Tx(), sig.Exchange, tr.Mode, func(p db.ExitParent) bool {
		return exchange.SameSymbol(p.Symbol, sig.Symbol) && cancelTakes(sig, p.Strategy) && !shared.keeps(p.Symbol, p.ExitRole)
	}, tr.ID)
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		return nil, unavailable("an exit of this symbol is being placed right now; nothing was cancelled, retry", 2*time.Second, err)
	case err != nil:
		return nil, unavailable("the database is unavailable; nothing was cancelled", 5*time.Second, err)
	}
	if _, ok := venue.(exchange.SettingExiter); ok {
		// A leg setting one of the position's settings (a Bybit trailing
		// stop) holds this lock until its record commits: one set
		// meanwhile is recorded open before LockOpenOrders reads, and
		// cancelled below; none is set until the cancel commits.
		switch err := db.LockPositionSetting(ctx, tx.Tx(), sig.Exchange, tr.Mode, sig.Symbol); {
		case errors.Is(err, db.ErrLockTimeout):
			return nil, unavailable("an exit of this symbol is being placed right now; nothing was cancelled, retry", 2*time.Second, err)
		case err != nil:
			return nil, unavailable("the database is unavailable; nothing was cancelled", 5*time.Second, err)
		}
	}
	rows, err := db.LockOpenOrders(ctx, tx.Tx(), sig.Exchange, tr.Mode, func(o db.OrderRow) bool {
		// Only orders hoox placed (its client order IDs), never a manual
		// one, though hoox never records those anyway.
		return exchange.SameSymbol(o.Symbol, sig.Symbol) && signal.IsClientOrderID(o.ClientOrderID) && cancelTakes(sig, o.Strategy) &&
			!shared.keeps(o.Symbol, o.Role)
	})
	switch {
	case errors.Is(err, db.ErrLockTimeout):
		// A follow job is asking the venue about one of them right now.
		return nil, unavailable("an open order of this symbol is being looked at right now; nothing was cancelled, retry", 2*time.Second, err)
	case err != nil:
		return nil, unavailable("the database is unavailable; nothing was cancelled", 5*time.Second, err)
	}
	out := &Outcome{TraceID: tr.ID, ReceivedAt: res.Trace.ReceivedAt, Cancelled: []db.OrderRow{}}
	ids := []string{}
	// Entries this cancel found filled at the venue (before it came): it
	// records them, which plans their exits, and leaves those exits to be
	// placed — the position they protect is open, and nothing told the
	// trader to do without its stop-loss.
	var filledFirst []string
	for _, row := range rows {
		order, err := s.orderOf(ctx, row)
		if err != nil {
			return nil, unavailable("the database is unavailable; nothing was recorded, retry to finish the cancel", 5*time.Second, err)
		}
		vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
		report, err := canceler.Cancel(vctx, order)
		if err == nil {
			report, err = exchange.ReadFees(vctx, venue, order, report, row.FilledQuantity.Decimal, row.Fee.Valid)
		}
		cancel()
		if s.deps.AfterVenue != nil {
			s.deps.AfterVenue(tr.ID)
		}
		switch {
		case errors.Is(err, exchange.ErrNotFound):
			// Recorded open but unknown to the venue: nothing to cancel;
			// its follow job keeps asking.
			s.deps.Logger.WarnContext(ctx, "cancel: the venue holds no such order", "trace_id", tr.ID,
				"client_order_id", row.ClientOrderID, "exchange", sig.Exchange)
			continue
		case err != nil:
			s.venueError(ctx, sig.Exchange, sig.Test, err)
			return nil, unavailable(fmt.Sprintf("venue %s failed while cancelling %s; orders cancelled so far stay cancelled there: retry to finish and record them",
				sig.Exchange, row.ClientOrderID), 5*time.Second, err)
		}
		u := db.UpdateFromReport(report)
		if u.Status == exchange.StatusOpen {
			// Not cancelled (a venue that took the request but still
			// shows the order): its follow job records the end.
			continue
		}
		if u.Status == exchange.StatusCancelled {
			u.CancelledBy = tr.ID
		}
		ev, msg := jobs.OrderChange(row, row.Mode, order, u, s.deps.Notifier)
		if _, err := db.ApplyOrderUpdate(ctx, tx.Tx(), row.ClientOrderID, u, []db.Event{ev}); err != nil {
			return nil, unavailable("the database is unavailable; retry to finish the cancel", 5*time.Second, err)
		}
		if msg != nil && s.deps.Jobs != nil {
			if err := s.deps.Notifier.InsertTx(ctx, s.deps.Jobs, tx.Tx(), *msg); err != nil {
				return nil, unavailable("the database is unavailable; retry to finish the cancel", 5*time.Second, err)
			}
		}
		if u.Status != exchange.StatusCancelled {
			if u.FilledQuantity.IsPositive() {
				filledFirst = append(filledFirst, row.ClientOrderID)
			}
			continue
		}
		done := row
		done.Status, done.FilledQuantity = string(u.Status), decimal.NewNullDecimal(u.FilledQuantity)
		if u.AvgPrice.Valid {
			done.AvgPrice = u.AvgPrice
		}
		// As the update wrote them (coalesced with what the row held), so
		// the answer shows what a repeat of it reads back.
		if u.FillPrice.Valid {
			done.FillPrice = u.FillPrice
		}
		if u.Fee.Valid {
			done.Fee = u.Fee
		}
		if u.FeeAsset != "" {
			fa := u.FeeAsset
			done.FeeAsset = &fa
		}
		if done.Role == exchange.RolePrimary {
			// As the update wrote them (db.OrderUpdate.TakeProfit).
			done.TakeProfit, done.StopLoss = u.TakeProfit, u.StopLoss
		}
		cb := tr.ID
		done.CancelledBy = &cb
		out.Cancelled = append(out.Cancelled, done)
		ids = append(ids, row.ClientOrderID)
	}
	// Marked exits that are settings of the position: cleared now, while
	// no later entry's can be taken for them.
	cleared, clearedRows, err := s.clearMarkedSettings(ctx, tx, venue, marked)
	if err != nil {
		return nil, err
	}
	out.Cancelled = append(out.Cancelled, clearedRows...)
	// Exits of the symbol's (the strategy's) filled entries that no pass
	// has sent yet
	// (their first send never reached the venue): the sweeper would place
	// them after the cancel. Settled here, in the claim's commit, after
	// the venue calls so their rows stay locked only briefly; a pass that
	// arms one first keeps it (db.MarkLegSent).
	dropped, err := db.DropUnsentExitLegs(ctx, tx.Tx(), sig.Exchange, tr.Mode, func(p db.ExitParent) bool {
		return exchange.SameSymbol(p.Symbol, sig.Symbol) && cancelTakes(sig, p.Strategy) && !slices.Contains(filledFirst, p.ClientOrderID)
	}, tr.ID)
	if err != nil {
		return nil, unavailable("the database is unavailable; retry to finish the cancel", 5*time.Second, err)
	}
	notPlaced := make([]string, 0, len(dropped))
	for _, leg := range dropped {
		notPlaced = append(notPlaced, leg.ClientOrderID)
	}
	kept := shared.kept(notPlaced)
	unknown := make([]string, 0, len(marked))
	for _, leg := range marked {
		unknown = append(unknown, leg.ClientOrderID)
	}
	ev := db.Event{TraceID: tr.ID, Event: db.EventCancelled, SourceIP: in.SourceIP,
		Detail: map[string]any{"symbol": sig.Symbol, "cancelled": ids, "open_orders": len(rows), "exits_not_placed": notPlaced,
			"exits_to_cancel": unknown, "exits_cleared": cleared, "exits_kept_position": kept, "filled_first": filledFirst}}
	if err := tx.Record(ctx, db.Settlement{TraceID: tr.ID, Status: db.TraceDispatched, Events: []db.Event{ev}}); err != nil {
		return nil, unavailable("the database is unavailable; retry to finish the cancel", 5*time.Second, err)
	}
	out.Status = db.TraceDispatched
	return out, nil
}

// cancelTakes reports whether the cancel signal sig is for an order (or
// the exits of an entry) recorded with strategy. A cancel that names a
// strategy is for that strategy's orders only: several strategies trade
// one symbol side by side on one account, and one's cancel (its "cancel,
// then close", or the cancel of its resting limit entry) must not take
// another's entries or its stop-loss. Without a strategy it is for every
// order of the symbol. hoox records the signal's strategy on every order
// and exit it places (exchange.Order.Strategy; "" for a signal that named
// none), on every venue; migration 00046 filled it in for what was placed
// before, from the intent's signal. An order recorded without one (its
// signal holds none) cannot be told apart, so every cancel of its symbol
// takes it, as before.
func cancelTakes(sig signal.Signal, strategy *string) bool {
	return sig.Strategy == "" || strategy == nil || *strategy == sig.Strategy
}

// orderOf is the order as hoox sent it, for the venue's cancel and
// lookup: its intent, or for a leg (which has none) the order its leg
// stores — an exit's Exit role and resolved target with it, so a venue
// that holds exits apart (Binance's USDⓈ-M algo orders) cancels it where
// it rests (issue 19). An order recorded with neither is rebuilt from its
// row.
func (s *Service) orderOf(ctx context.Context, row db.OrderRow) (exchange.Order, error) {
	it, err := db.GetIntent(ctx, s.deps.MarkerPool, row.ClientOrderID)
	switch {
	case err == nil:
		return it.Order, nil
	case !errors.Is(err, db.ErrNotFound):
		return exchange.Order{}, err
	}
	leg, err := db.GetLegOrder(ctx, s.deps.MarkerPool, row.ClientOrderID)
	switch {
	case err == nil:
		return leg, nil
	case !errors.Is(err, db.ErrNotFound):
		return exchange.Order{}, err
	}
	return exchange.Order{ClientOrderID: row.ClientOrderID, Symbol: row.Symbol, Action: row.Action, Side: row.Side,
		OrderType: row.OrderType, Quantity: row.Quantity, Price: row.Price, Test: row.Mode == signal.ModeTest}, nil
}
