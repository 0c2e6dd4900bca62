package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// clearMarkedSettings clears, for a cancel signal, the position settings
// among the exit legs it marked (exchange.ExitIsSetting: a Bybit linear
// trailing stop, the position's trailingStop) and settles them in its
// claim's commit, under the trace locks MarkCancelledExitLegs took and the
// position's setting lock cancelOrders holds (db.LockPositionSetting). A
// setting carries no ID: a later pass on such a leg could not tell its
// setting from a later entry's and would clear that one. Here none can be
// later: every leg that set one is recorded, and the recorded ones were
// cancelled above, or is marked too.
//   - found: cleared (trailingStop 0) and recorded cancelled by the
//     cancel; gone with its position: recorded expired;
//   - nothing of it past its accept window: settled not_placed;
//   - nothing of it while its send may still take effect, or no answer:
//     left marked, for the leg runner (jobs.LegRunner.settingAfterCancel),
//     which acts on the position only while no later leg set it.
//
// It returns the legs it settled. A failure of the venue's clear or of
// the database is a 503: the claim rolls back, what was cleared stays
// cleared (clearing is idempotent), and the sender's retry finishes.
func (s *Service) clearMarkedSettings(ctx context.Context, tx *db.ClaimTx, venue exchange.Venue, marked []db.Leg) ([]string, []db.OrderRow, error) {
	canceler := venue.(exchange.Canceler)
	settled := []string{}
	var cleared []db.OrderRow
	for _, leg := range marked {
		if !leg.Sent || !exchange.ExitIsSetting(venue, leg.Order) {
			continue
		}
		vctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.VenueTimeout)
		held, err := venue.Lookup(vctx, leg.Order)
		if err == nil && held.Status == exchange.StatusOpen {
			held, err = canceler.Cancel(vctx, leg.Order)
			if err != nil {
				cancel()
				s.venueError(ctx, leg.Exchange, leg.Mode == signal.ModeTest, err)
				return nil, nil, unavailable(fmt.Sprintf("venue %s failed while clearing the %s position's %s %s; orders cancelled so far stay cancelled there: retry to finish and record them",
					leg.Exchange, leg.Order.Symbol, leg.Role, leg.ClientOrderID), 5*time.Second, err)
			}
		}
		cancel()
		var row *db.OrderRow
		var outcome db.IntentOutcome
		var ev db.Event
		switch {
		case err == nil && held.Status != exchange.StatusOpen:
			rec := jobs.LegReport(leg, held, true)
			rec.Detail["cancelled_by"] = leg.CancelledBy
			row, outcome = rec.Order, rec.IntentOutcome
			ev = db.Event{TraceID: leg.TraceID, Event: db.EventLegPlaced, Detail: rec.Detail}
		case (errors.Is(err, exchange.ErrNotFound) || errors.Is(err, exchange.ErrMismatch)) && leg.SentAgo >= venue.AcceptWindow():
			outcome = db.IntentNotPlaced
			ev = db.Event{TraceID: leg.TraceID, Event: db.EventLegFailed, Detail: map[string]any{
				"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq, "cancelled_by": leg.CancelledBy,
				"reason": fmt.Sprintf("the cancel signal %s came after this %s may have been set; the position does not hold it (%v) "+
					"and its accept window has closed: never set. Not sent again, and not looked up again: a later setting "+
					"of the position could not be told from it", leg.CancelledBy, leg.Role, err)}}
		default:
			// Its send may still take effect (or the venue did not
			// answer the read): the leg runner decides it after the
			// window.
			s.deps.Logger.InfoContext(ctx, "cancel: setting left to the leg runner", "client_order_id", leg.ClientOrderID,
				"role", leg.Role, "error", err)
			continue
		}
		if err := db.SettleLegIn(ctx, tx.Tx(), leg, row, outcome, []db.Event{ev}); err != nil {
			return nil, nil, unavailable("the database is unavailable; retry to finish the cancel", 5*time.Second, err)
		}
		settled = append(settled, leg.ClientOrderID)
		if row != nil && row.CancelledBy != nil {
			// Cancelled by this signal: its answer lists it, as a repeat
			// of it (db.OrdersCancelledBy) does.
			cleared = append(cleared, *row)
		}
	}
	return settled, cleared, nil
}

// sharedSetting is what a cancel signal naming a strategy keeps of its
// symbol's position settings (exchange.SettingExiter: a Bybit linear
// trailing stop, trading-stop's trailingStop). The position holds one
// such setting for every entry on it, whichever strategy sent each: the
// last one set is what trails, and clearing it clears it for all. When
// an exit the cancel does not take (another strategy's, or one recorded
// without a strategy) is a setting of the same position, the cancel
// keeps every setting of it — neither cancels one recorded open nor marks
// one that may have been set — so the other strategy's position stays
// protected; its own are named in its event (exits_kept_position). A
// cancel without strategy, or one whose strategy alone holds the
// settings, clears them as before; closing the position ends them at the
// venue too. Its own settings still unsent are dropped as any exit is:
// they change nothing at the venue.
type sharedSetting struct {
	venue exchange.Venue
	// shared is true when another strategy's exit is a setting of the
	// position.
	shared bool
	// own are the cancel's strategy's live setting exits of the symbol.
	own []string
}

// sharedSettings reads, in the cancel's claim, the live exits of its
// venue and mode (db.LiveExits) when in's cancel names a strategy on a
// venue with position settings.
func (s *Service) sharedSettings(ctx context.Context, tx *db.ClaimTx, in Input, venue exchange.Venue) (sharedSetting, error) {
	sig := in.Signal
	out := sharedSetting{venue: venue}
	if _, ok := venue.(exchange.SettingExiter); !ok || sig.Strategy == "" {
		return out, nil
	}
	exits, err := db.LiveExits(ctx, tx.Tx(), sig.Exchange, in.Trace.Mode)
	if err != nil {
		return out, err
	}
	for _, e := range exits {
		if !exchange.SameSymbol(e.Symbol, sig.Symbol) || !out.isSetting(e.Symbol, e.Role) {
			continue
		}
		// One recorded without a strategy (placed before 00046) may be
		// another strategy's: the setting is kept for it, as the type says.
		if e.Strategy != nil && cancelTakes(sig, e.Strategy) {
			out.own = append(out.own, e.ClientOrderID)
		} else {
			out.shared = true
		}
	}
	return out, nil
}

func (ss sharedSetting) isSetting(symbol, role string) bool {
	return exchange.ExitIsSetting(ss.venue, exchange.Order{Symbol: symbol, Exit: role})
}

// keeps reports whether the cancel keeps an exit of symbol in role: a
// setting of a position another strategy shares.
func (ss sharedSetting) keeps(symbol, role string) bool {
	return ss.shared && ss.isSetting(symbol, role)
}

// kept lists the cancel's own settings it kept, but those it dropped
// unsent (dropped).
func (ss sharedSetting) kept(dropped []string) []string {
	out := []string{}
	if !ss.shared {
		return out
	}
	for _, id := range ss.own {
		if !slices.Contains(dropped, id) {
			out = append(out, id)
		}
	}
	return out
}
