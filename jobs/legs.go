package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/signal"
)

// LegRunner places a trace's legs (issue 19: the further parts of a split
// close, …) through the same protocol as the primary order: under the
// trace's lock, each leg's intent is made durable before its order is sent
// (db.MarkLegSent, only while the leg is as the pass read it under the
// lock: a pass whose lock was lost does not send what another armed); a
// leg that may have been sent already is looked up first and adopted if
// the venue holds it; a "not found" counts only after the venue's accept
// window, and is sent again only on a venue that refuses late requests
// (exchange.RefusesLate) — elsewhere the leg ends failed as a missed
// order, for an operator. The gateway runs it right
// after the primary is recorded, and the sweeper for legs a crash left
// open; both call Finish, and the lock lets one party at a time work on a
// trace's legs.
type LegRunner struct {
	pool       *pgxpool.Pool
	intentPool *pgxpool.Pool
	cfg        Config
	venues     *exchange.Registry
	log        *slog.Logger
	// afterVenue, when set, runs between a leg's venue answer and its
	// record (the crash drill).
	afterVenue func(clientOrderID string)
	// notifier, when set, queues a notification with each leg recorded
	// refused or settled failed, through inserter (nil: the River client
	// of the worker's context).
	notifier *Notifier
	inserter NotifyInserter
	// jobs queues the follow job of a leg recorded open (an exit resting
	// at the venue); nil: the River client working the current job, if
	// any (QueueFollowsWith).
	jobs FollowInserter
}

// QueueFollowsWith makes r queue the follow job of every leg it records
// open through ins, in the transaction that records it: the gateway's
// River client. Without it, r uses the River client of the job it runs in
// (the sweeper, the reconcile and follow jobs).
func (r *LegRunner) QueueFollowsWith(ins FollowInserter) *LegRunner {
	r.jobs = ins
	return r
}

// NewLegRunner returns a runner that locks and records through pool and
// makes leg intents durable through intentPool (nil: pool). afterVenue,
// when set, runs between each leg's venue answer and its record: fault
// drills kill the process there.
func NewLegRunner(pool, intentPool *pgxpool.Pool, cfg Config, venues *exchange.Registry, logger *slog.Logger, afterVenue func(clientOrderID string)) *LegRunner {
	if intentPool == nil {
		intentPool = pool
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &LegRunner{pool: pool, intentPool: intentPool, cfg: cfg.WithDefaults(), venues: venues, log: logger, afterVenue: afterVenue}
}

// WithNotifier makes r queue a notification (event "rejected" for a leg
// the venue refused, "failed" for one settled without an order) in the
// transaction that records it: an entry whose exit did not go out is a
// position without the protection asked for, and the trader must hear of
// it. ins inserts the jobs; nil uses the River client of the context (a
// worker's). It returns r.
func (r *LegRunner) WithNotifier(n *Notifier, ins NotifyInserter) *LegRunner {
	r.notifier, r.inserter = n, ins
	return r
}

// legHook is the notification of ev (leg_rejected or leg_failed) for leg,
// as a hook for the transaction that records it; nil when none is enabled.
func (r *LegRunner) legHook(ev db.Event, leg db.Leg) db.TxHook {
	event := notify.EventRejected
	if ev.Event == db.EventLegFailed {
		event = notify.EventFailed
	}
	if !r.notifier.Enabled(event) {
		return nil
	}
	msg := TraceMessage(db.Event{TraceID: ev.TraceID, Event: event, Detail: ev.Detail}, leg.Exchange, leg.Mode, leg.Order)
	msg.Detail = fmt.Sprintf("%s of order %s was not placed: %s", leg.Role, leg.ParentClientOrderID, msg.Detail)
	return func(ctx context.Context, tx pgx.Tx) error {
		ins := r.inserter
		if ins == nil {
			client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
			if err != nil {
				r.log.WarnContext(ctx, "leg refusal not notified: no job client here", "client_order_id", leg.ClientOrderID, "error", err)
				return nil
			}
			ins = client
		}
		return r.notifier.InsertTx(ctx, ins, tx, msg)
	}
}

// Finish places or settles, in plan order, every open leg of the order
// placed under parent (a trace locked by lockKey) and returns the legs'
// recorded orders. It stops at the first leg whose fate it cannot decide
// now — its order may still be accepted or is still executing (ErrNotYet),
// or the venue or the database gave no answer (another error) — and leaves
// it and the legs after it to a later pass (the sweeper's).
func (r *LegRunner) Finish(ctx context.Context, lockKey, parent string) ([]db.OrderRow, error) {
	for {
		tx, legs, err := db.LockLegs(ctx, r.pool, lockKey, parent, r.cfg.LockWait, r.cfg.Timing.VenueTimeout+45*time.Second)
		if err != nil {
			return nil, err
		}
		var open *db.Leg
		for i := range legs {
			if legs[i].Outcome == "" {
				open = &legs[i]
				break
			}
		}
		if open == nil {
			tx.Rollback(ctx)
			break
		}
		if err := r.step(ctx, tx, *open); err != nil {
			tx.Rollback(ctx)
			return nil, err
		}
	}
	return db.LegOrders(ctx, r.pool, parent)
}

// markUnsent records that the leg armed armed times under armID was never
// sent, on a context of its own: the pass's may be what ended the send (a
// shutdown, a job's timeout), and an armed leg that never left would be
// failed as a missed trade by the next pass at a venue that may fill late.
func (r *LegRunner) markUnsent(ctx context.Context, clientOrderID string, armed int, armID int64) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markUnsentTimeout)
	defer cancel()
	if err := db.MarkLegUnsent(uctx, r.intentPool, clientOrderID, armed, armID); err != nil {
		r.log.WarnContext(ctx, "leg: mark unsent", "client_order_id", clientOrderID, "error", err)
	}
}

// giveUp fails a sent leg whose venue could not be asked about it for
// SweepGiveUp (as the sweeper gives up an intent): whether its order exists
// is unknown, so the leg is failed, not freed, and its leg_failed event is
// notified once, instead of a warning on every sweep for ever.
func (r *LegRunner) giveUp(ctx context.Context, tx *db.LegsTx, leg db.Leg, cause string) error {
	return r.fail(ctx, tx, leg, db.IntentFailed, fmt.Sprintf(
		"venue %s could not be asked about order %s for %s (%s); whether it exists is unknown: check the venue",
		leg.Exchange, leg.ClientOrderID, r.cfg.SweepGiveUp, cause))
}

// exitPositionLag is how long after its entry's fill was recorded an exit
// waits for the venue's position to show it before being refused or capped
// for a position smaller than it (resolveExit).
const exitPositionLag = 30 * time.Second

// maxLegSends is how many sends of one leg, each never seen at the venue,
// a pass makes before it fails the leg as unknown (step). Armings proven
// never sent (the venue out of reach) do not count (Leg.Sends).
const maxLegSends = 10

// markUnsentTimeout bounds markUnsent.
const markUnsentTimeout = 10 * time.Second

// step decides one open leg under the pass's lock and ends tx: it records
// the leg's order (placed or adopted), settles it without one, or returns
// an error (the caller rolls back) when nothing can be decided now.
func (r *LegRunner) step(ctx context.Context, tx *db.LegsTx, leg db.Leg) error {
	venue, ok := r.venues.For(leg.Exchange, leg.Mode == signal.ModeTest)
	if !ok {
		if leg.Sent && leg.SentAgo >= r.cfg.SweepGiveUp {
			return r.giveUp(ctx, tx, leg, fmt.Sprintf("venue %q is not configured on this replica", leg.Exchange))
		}
		return fmt.Errorf("leg %s: venue %q is not configured on this replica", leg.ClientOrderID, leg.Exchange)
	}
	if exchange.ExitIsSetting(venue, leg.Order) {
		// A setting of the position, which carries no ID: held from here
		// until the leg is recorded, so a cancel signal (gateway
		// cancelOrders) and the pass on a leg a cancel marked never act
		// on one this pass is setting and has not recorded yet.
		if err := tx.LockPositionSetting(ctx, leg); err != nil {
			return fmt.Errorf("leg %s: %w", leg.ClientOrderID, err)
		}
		if leg.Sent && leg.CancelledBy != "" {
			_, err := r.settingAfterCancel(ctx, tx, venue, leg)
			if errors.Is(err, ErrUnanswered) && leg.SentAgo >= r.cfg.SweepGiveUp {
				// Failed as unknown: AskUnknown decides it as above.
				return r.giveUp(ctx, tx, leg, err.Error())
			}
			return err
		}
	}
	if leg.Sent {
		// An earlier pass may have sent it and died: ask first, never send
		// blind.
		vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
		held, err := venue.Lookup(vctx, leg.Order)
		cancel()
		if exchange.ExitIsSetting(venue, leg.Order) && errors.Is(err, exchange.ErrMismatch) {
			// Another setting on the position: leg's replaced, or not there.
			later, lerr := tx.LaterSettingLeg(ctx, leg)
			if lerr != nil {
				return fmt.Errorf("leg %s: %w", leg.ClientOrderID, lerr)
			}
			held, err = settingMismatch(leg, later, leg.SentAgo >= venue.AcceptWindow(), err)
		}
		switch {
		case err == nil && leg.CancelledBy != "":
			return r.cancelFound(ctx, tx, venue, leg, held)
		case err == nil && leg.Order.Exit == "" && stillExecuting(leg.Order, held) && leg.SentAgo < followOpenMarket:
			return fmt.Errorf("leg %s: %w: the market order is still executing", leg.ClientOrderID, ErrNotYet)
		case err == nil:
			return r.record(ctx, tx, leg, held, true)
		case errors.Is(err, exchange.ErrNotFound) && leg.SentAgo < venue.AcceptWindow():
			return fmt.Errorf("leg %s: %w: not visible yet and its accept window is open", leg.ClientOrderID, ErrNotYet)
		case errors.Is(err, exchange.ErrNotFound) && leg.CancelledBy != "" && exchange.RefusesLateOrder(venue, leg.Order):
			return r.settleCancelled(ctx, tx, leg, fmt.Sprintf("the signal %s (a cancel, or a close that left the position gone) came after this exit may have been sent; "+
				"it is not at the venue and its accept window has closed: it was never placed, and is not sent again", leg.CancelledBy))
		case errors.Is(err, exchange.ErrNotFound) && leg.CancelledBy != "":
			// The cancel came first: never sent again, even where a
			// same-ID send is safe; the venue may still book it, so it
			// stays unknown and the sweeper asks (AskUnknown).
			return r.fail(ctx, tx, leg, db.IntentFailed, fmt.Sprintf(
				"the signal %s (a cancel, or a close that left the position gone) came after exit %s may have been sent: not sent again; whether it exists is unknown, check the venue",
				leg.CancelledBy, leg.ClientOrderID))
		case errors.Is(err, exchange.ErrNotFound) && !exchange.ResendsSameID(venue, leg.Order):
			return r.fail(ctx, tx, leg, db.IntentFailed, missedReason(leg.ClientOrderID, leg.Exchange))
		case errors.Is(err, exchange.ErrNotFound) && leg.Sends >= maxLegSends:
			// Sent this often and never seen: an answer hoox cannot read
			// as a refusal (an untabled code), or a venue that keeps
			// refusing for a reason that does not pass (a Bybit trailing
			// stop whose position is gone). Sending again every pass
			// would go on for ever; whether an order exists is unknown,
			// so the leg is failed for an operator, not freed.
			return r.fail(ctx, tx, leg, db.IntentFailed, fmt.Sprintf(
				"sent %d times and never seen at the venue: not sent again; whether order %s exists is unknown, check the venue",
				leg.Sends, leg.ClientOrderID))
		case errors.Is(err, exchange.ErrNotFound):
			// Past the window on a venue that refuses late requests:
			// nothing can appear, send again under the same ID.
		case errors.Is(err, exchange.ErrMismatch):
			return r.fail(ctx, tx, leg, db.IntentKeyReused,
				fmt.Sprintf("the venue holds a different order under %s (%v): not adopted", leg.ClientOrderID, err))
		case leg.SentAgo >= r.cfg.SweepGiveUp:
			return r.giveUp(ctx, tx, leg, err.Error())
		default:
			return fmt.Errorf("leg %s: %w: %w", leg.ClientOrderID, ErrUnanswered, err)
		}
	}
	if leg.CancelledBy != "" {
		// Marked by a cancel signal (or a close that left the position
		// gone: db.MarkClosedExitLegs) after an arming proven unsent: a
		// cancel leaves no hoox order of its symbol resting, and a gone
		// position needs no exit.
		return r.settleCancelled(ctx, tx, leg, fmt.Sprintf("the signal %s (a cancel, or a close that left the position gone) came before this exit was placed: "+
			"it is not placed", leg.CancelledBy))
	}
	if leg.Order.Exit != "" && leg.Order.Exit != exchange.RoleOCO {
		// An exit whose sibling filled protects a position that is gone:
		// the follow job's cancelSiblings reaches only the exits recorded
		// open, not one still planned (its first send never reached the
		// venue) or to be sent again. An OCO list is one order: it has
		// no sibling.
		filledBy, err := db.FilledSiblingExit(ctx, r.pool, leg.ClientOrderID)
		if err != nil {
			return err
		}
		if filledBy != "" {
			return r.fail(ctx, tx, leg, db.IntentNotPlaced,
				fmt.Sprintf("exit %s filled first: the position it protected is closed", filledBy))
		}
	}
	if leg.Order.Exit != "" {
		// The entry's fill, read once: what an exit covers and where its
		// percent target lies come from it.
		fill, err := db.ParentOrderFill(ctx, r.pool, leg.ParentClientOrderID)
		if err != nil {
			return err
		}
		if leg.Order.PositionBefore != nil && fill.FilledQuantity.Valid && fill.FilledQuantity.Decimal.IsPositive() {
			// An entry that only reduced (or closed) a position on the
			// other side opened nothing for its exits to protect: each is
			// recorded rejected with why, nothing sent, as Bybit's
			// trailing stop is (bybit.placeTrailing). The position before
			// the entry is the one read before its intent, and the
			// entry's fill is final, so every pass decides alike.
			if reason := leg.Order.OnlyReduced(fill.FilledQuantity.Decimal); reason != "" {
				return r.record(ctx, tx, leg, exchange.Report{Symbol: exchange.VenueSymbol(leg.Order.Symbol), Side: leg.Order.Side,
					Quantity: leg.Order.Quantity, Status: exchange.StatusRejected, Reason: reason}, false)
			}
		}
		exit, reason, err := r.resolveExit(ctx, venue, leg, fill)
		if err != nil {
			return err
		}
		if reason != "" {
			return r.fail(ctx, tx, leg, db.IntentRejected, reason)
		}
		leg.Order = exit
	}
	// Armed only if no other pass armed it since this one read it under
	// the lock (a pass whose session, and the lock, was lost): otherwise
	// stop before the venue sees anything.
	armed, armID := leg.Attempts+1, db.NewArmID()
	switch err := db.MarkLegSent(ctx, r.intentPool, leg, armID); {
	case errors.Is(err, db.ErrKillSwitch):
		// Halted: nothing is placed, the leg waits (open) for a pass after
		// the operator releases the switch.
		return fmt.Errorf("%w: %w", ErrNotYet, err)
	case errors.Is(err, db.ErrIntentConsumed):
		return err
	case err != nil:
		// The arming may have committed with its answer lost: nothing was
		// sent, so undo exactly that arming (a no-op if it never
		// committed), or the next pass would find the leg sent, not find
		// it at the venue, and fail it as a missed trade. armID, not
		// armed, tells it from another pass's arming of the same count
		// (one that took the lock this pass lost), whose send this must
		// not clear.
		r.markUnsent(ctx, leg.ClientOrderID, armed, armID)
		return err
	}
	vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
	// Place may read the venue before it sends (the position, the
	// leverage): the adapter then reads the switch again first.
	vctx = exchange.WithSendGuard(vctx, db.SendGuard(r.intentPool))
	report, err := venue.Place(vctx, leg.Order)
	cancel()
	if r.afterVenue != nil {
		r.afterVenue(leg.ClientOrderID)
	}
	switch {
	case errors.Is(err, exchange.ErrUnreachable) && errors.Is(err, db.ErrKillSwitch):
		// Engaged during Place's reads, nothing sent: the leg waits, as
		// for MarkLegSent's halt.
		r.markUnsent(ctx, leg.ClientOrderID, armed, armID)
		return fmt.Errorf("leg %s: %w: %w", leg.ClientOrderID, ErrNotYet, err)
	case errors.Is(err, exchange.ErrUnreachable):
		// Nothing reached the venue: the next pass sends without asking.
		r.markUnsent(ctx, leg.ClientOrderID, armed, armID)
		return fmt.Errorf("leg %s: %w", leg.ClientOrderID, err)
	case err != nil:
		// Sent, answer unknown (or a duplicate ID): the next pass looks
		// it up once the venue's window allows.
		return fmt.Errorf("leg %s: %w: %w", leg.ClientOrderID, ErrNotYet, err)
	case leg.Order.Exit == "" && stillExecuting(leg.Order, report):
		return fmt.Errorf("leg %s: %w: the venue reports the market order still executing", leg.ClientOrderID, ErrNotYet)
	}
	return r.record(ctx, tx, leg, report, false)
}

// LegReport is how leg's order, as the venue reports it, is recorded: the
// order row and outcome (db.RecordReport) with the leg's place in its
// signal in the event's detail; adopted marks an order found rather than
// placed by this pass, was_unknown one found after the leg failed as
// unknown, and an order cancelled for the cancel signal that marked the
// leg names it (cancelled_by). The leg runner and a cancel signal's own
// clearing of a marked setting record legs alike.
func LegReport(leg db.Leg, report exchange.Report, adopted bool) db.Recorded {
	rec := db.RecordReport(leg.TraceID, leg.Exchange, leg.Mode, leg.Order, report)
	rec.Detail["role"], rec.Detail["seq"], rec.Detail["parent_client_order_id"] = leg.Role, leg.Seq, leg.ParentClientOrderID
	if adopted {
		rec.Detail["adopted"] = true
	}
	if leg.Outcome == db.IntentFailed {
		// Failed with its order unknown, found since (AskUnknown).
		rec.Detail["was_unknown"] = true
	}
	if leg.CancelledBy != "" && report.Status == exchange.StatusCancelled && rec.Order != nil {
		// Found after a cancel signal and cancelled for it (cancelFound).
		cb := leg.CancelledBy
		rec.Order.CancelledBy = &cb
		rec.Detail["cancelled_by"] = cb
	}
	return rec
}

// record writes the order the venue holds (or refused) for leg.
func (r *LegRunner) record(ctx context.Context, tx *db.LegsTx, leg db.Leg, report exchange.Report, adopted bool) error {
	rec := LegReport(leg, report, adopted)
	ev := db.Event{TraceID: leg.TraceID, Event: db.EventLegPlaced, Detail: rec.Detail}
	var hook db.TxHook
	if rec.IntentOutcome == db.IntentRejected {
		ev.Event = db.EventLegRejected
		hook = r.legHook(ev, leg)
	}
	return tx.SettleWith(ctx, leg, rec.Order, rec.IntentOutcome, []db.Event{ev}, chainHooks(r.followHook(rec.Order, leg), hook))
}

// AskUnknown asks the venue again about leg, which ended failed with its
// order unknown (db.ListUnknownLegs: sent and never seen at a venue that
// may still book a late request), under its trace's lock, as step asks
// about a leg that may have been sent. The order found is recorded as
// adopted, and followed when it rests open (an exit), so the spot ledger
// sees its fill and a cancel knows it; absence proven (a venue that
// refuses a late request of the leg's kind, past its window) settles the
// leg not_placed; another order under its ID, key_reused. Anything else —
// not found where the venue may still book it, a market order still
// executing, no answer — leaves it unknown, marked asked so the others
// come first. It returns the outcome settled, "" when the leg stays
// unknown (or was settled by another party since it was listed). It never
// sends anything.
func (r *LegRunner) AskUnknown(ctx context.Context, unknown db.Leg) (db.IntentOutcome, error) {
	outcome, _, err := r.askUnknown(ctx, unknown)
	return outcome, err
}

// askUnknown is AskUnknown; unanswered is true when the venue gave no
// answer (noAnswer; the sweep then leaves the venue's other unknowns for its next
// pass: SweepWorker.Sweep).
func (r *LegRunner) askUnknown(ctx context.Context, unknown db.Leg) (_ db.IntentOutcome, unanswered bool, err error) {
	tx, legs, err := db.LockLegs(ctx, r.pool, unknown.LockKey, unknown.ParentClientOrderID, r.cfg.LockWait, r.cfg.Timing.VenueTimeout+45*time.Second)
	if err != nil {
		return "", false, err
	}
	var leg db.Leg
	for _, l := range legs {
		if l.ClientOrderID == unknown.ClientOrderID {
			leg = l
		}
	}
	if leg.Outcome != db.IntentFailed {
		tx.Rollback(ctx)
		return "", false, nil
	}
	venue, ok := r.venues.For(leg.Exchange, leg.Mode == signal.ModeTest)
	if !ok {
		return "", false, tx.MarkAsked(ctx, leg)
	}
	if leg.CancelledBy != "" && exchange.ExitIsSetting(venue, leg.Order) {
		// Never cleared once a later setting of the position may be the
		// one found, and settled rather than asked about for ever.
		outcome, err := r.settingAfterCancel(ctx, tx, venue, leg)
		if err == nil {
			return outcome, false, nil
		}
		r.log.WarnContext(ctx, "leg: ask about a setting after a cancel", "client_order_id", leg.ClientOrderID, "error", err)
		if errors.Is(err, ErrUnanswered) {
			r.venues.NoteError(leg.Exchange, err, r.cfg.Timing.Clock())
			return "", noAnswer(err), tx.MarkAsked(ctx, leg)
		}
		tx.Rollback(ctx)
		return "", false, err
	}
	setting := exchange.ExitIsSetting(venue, leg.Order)
	if setting {
		// Read under the position's setting lock, as step reads it: a
		// later leg being set is seen (db.LaterSettingLeg).
		if err := tx.LockPositionSetting(ctx, leg); err != nil {
			tx.Rollback(ctx)
			return "", false, fmt.Errorf("leg %s: %w", leg.ClientOrderID, err)
		}
	}
	vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
	held, err := venue.Lookup(vctx, leg.Order)
	cancel()
	if setting && errors.Is(err, exchange.ErrMismatch) {
		// Another setting on the position: leg's replaced, or not there.
		later, lerr := tx.LaterSettingLeg(ctx, leg)
		if lerr != nil {
			tx.Rollback(ctx)
			return "", false, fmt.Errorf("leg %s: %w", leg.ClientOrderID, lerr)
		}
		held, err = settingMismatch(leg, later, leg.SentAgo >= venue.AcceptWindow(), err)
	}
	switch {
	case err == nil && leg.Order.Exit == "" && stillExecuting(leg.Order, held) && leg.SentAgo < followOpenMarket:
	case err == nil:
		if r.jobs == nil {
			// Never record an open order that nothing will follow.
			if _, cerr := river.ClientFromContextSafely[pgx.Tx](ctx); cerr != nil {
				tx.Rollback(ctx)
				return "", false, fmt.Errorf("leg %s: no job client to follow its order: %w", leg.ClientOrderID, cerr)
			}
		}
		if leg.CancelledBy != "" {
			// Found after a cancel signal came: cancelled at the venue,
			// never left resting.
			var cerr error
			if held, cerr = r.cancelAtVenue(ctx, venue, leg, held); cerr != nil {
				tx.Rollback(ctx)
				return "", false, cerr
			}
		}
		outcome := db.RecordReport(leg.TraceID, leg.Exchange, leg.Mode, leg.Order, held).IntentOutcome
		return outcome, false, r.record(ctx, tx, leg, held, true)
	case errors.Is(err, exchange.ErrNotFound) && leg.SentAgo >= venue.AcceptWindow() &&
		exchange.ResendsSameID(venue, leg.Order) && leg.Sends < maxLegSends && leg.CancelledBy == "":
		// Given up while its venue could not be asked (giveUp): the venue
		// answers again, holds nothing under the ID, and a same-ID send is
		// safe there. Open again, so the next pass sends it — an exit or a
		// close part asked for is placed once the outage is over.
		ev := db.Event{TraceID: leg.TraceID, Event: db.EventLegReopened, Detail: map[string]any{
			"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq,
			"reason": fmt.Sprintf("order %s is not at the venue, which answers again: sent again under its ID", leg.ClientOrderID)}}
		return "", false, tx.Reopen(ctx, leg, ev)
	case errors.Is(err, exchange.ErrNotFound) && exchange.RefusesLateOrder(venue, leg.Order) && leg.SentAgo >= venue.AcceptWindow():
		// Only where the venue refuses a late request of this kind: at
		// one that may book it late (Binance spot, an OKX algo order)
		// "not found" proves nothing, and the leg stays unknown.
		ev := db.Event{TraceID: leg.TraceID, Event: db.EventLegFailed, Detail: map[string]any{
			"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq, "was_unknown": true, "found": false,
			"reason": fmt.Sprintf("order %s is not at the venue and its accept window has closed: it was never placed", leg.ClientOrderID)}}
		return db.IntentNotPlaced, false, tx.SettleWith(ctx, leg, nil, db.IntentNotPlaced, []db.Event{ev}, nil)
	case errors.Is(err, exchange.ErrMismatch):
		return db.IntentKeyReused, false, r.fail(ctx, tx, leg, db.IntentKeyReused,
			fmt.Sprintf("the venue holds a different order under %s (%v): not adopted", leg.ClientOrderID, err))
	case errors.Is(err, exchange.ErrNotFound):
		// Answered, deciding nothing (a venue that may book it late, or
		// no sends left): the next asks are spaced (db.legUnknownDue).
		return "", false, tx.MarkAnswered(ctx, leg)
	case err != nil:
		r.venues.NoteError(leg.Exchange, err, r.cfg.Timing.Clock())
		return "", noAnswer(err), tx.MarkAsked(ctx, leg)
	}
	return "", false, tx.MarkAsked(ctx, leg)
}

// cancelFound records leg, an exit a cancel signal marked (Leg.CancelledBy)
// that the venue holds as held: cancelled there first when it rests open
// (cancelAtVenue), so a cancel leaves no hoox order of its symbol resting.
func (r *LegRunner) cancelFound(ctx context.Context, tx *db.LegsTx, venue exchange.Venue, leg db.Leg, held exchange.Report) error {
	held, err := r.cancelAtVenue(ctx, venue, leg, held)
	if err != nil {
		return err
	}
	return r.record(ctx, tx, leg, held, true)
}

// cancelAtVenue cancels leg's order, which the venue holds as held, when
// it rests open, and returns what it became; held as it is otherwise.
func (r *LegRunner) cancelAtVenue(ctx context.Context, venue exchange.Venue, leg db.Leg, held exchange.Report) (exchange.Report, error) {
	if held.Status != exchange.StatusOpen {
		return held, nil
	}
	canceler, ok := venue.(exchange.Canceler)
	if !ok {
		return held, fmt.Errorf("leg %s: venue %s cannot cancel the exit the signal %s (a cancel, or a close) came for", leg.ClientOrderID, leg.Exchange, leg.CancelledBy)
	}
	vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
	report, err := canceler.Cancel(vctx, leg.Order)
	cancel()
	if err != nil {
		return held, fmt.Errorf("leg %s: %w: cancel for %s: %w", leg.ClientOrderID, ErrUnanswered, leg.CancelledBy, err)
	}
	if report.Status == exchange.StatusOpen {
		return held, fmt.Errorf("leg %s: %w: the venue still shows it open after the cancel for %s", leg.ClientOrderID, ErrNotYet, leg.CancelledBy)
	}
	return report, nil
}

// settleCancelled settles leg, marked by a cancel signal, not_placed with
// reason: it is not at the venue and will not be sent.
func (r *LegRunner) settleCancelled(ctx context.Context, tx *db.LegsTx, leg db.Leg, reason string) error {
	ev := db.Event{TraceID: leg.TraceID, Event: db.EventLegFailed, Detail: map[string]any{
		"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq, "cancelled_by": leg.CancelledBy, "reason": reason}}
	return tx.SettleWith(ctx, leg, nil, db.IntentNotPlaced, []db.Event{ev}, nil)
}

// followHook queues the follow job of row, leg's order, when it is open
// (an exit resting at the venue, a close part still executing): the
// follow worker records when it triggers, fills or is cancelled.
func (r *LegRunner) followHook(row *db.OrderRow, leg db.Leg) db.TxHook {
	if _, ok := FollowArgsFor(row, leg.Mode, leg.Order); !ok {
		return nil
	}
	return func(ctx context.Context, tx pgx.Tx) error {
		ins := r.jobs
		if ins == nil {
			if client, err := river.ClientFromContextSafely[pgx.Tx](ctx); err == nil {
				ins = client
			}
		}
		return InsertFollowTx(ctx, ins, tx, row, leg.Mode, leg.Order)
	}
}

// fail settles leg without an order: an operator must look at the venue.
func (r *LegRunner) fail(ctx context.Context, tx *db.LegsTx, leg db.Leg, outcome db.IntentOutcome, reason string) error {
	r.log.ErrorContext(ctx, "leg not placed", "trace_id", leg.TraceID, "client_order_id", leg.ClientOrderID,
		"role", leg.Role, "reason", reason)
	ev := db.Event{TraceID: leg.TraceID, Event: db.EventLegFailed,
		Detail: map[string]any{"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq, "reason": reason}}
	return tx.SettleWith(ctx, leg, nil, outcome, []db.Event{ev}, r.legHook(ev, leg))
}

// resolveExit sets an exit leg's quantity to what its entry executed (fill,
// as step read it; of it, what opened or added to a position on the
// entry's side, when the position before the entry is known:
// Order.PositionBefore) and
// its trigger from the entry's fill price (a percent target) or as given,
// rounded to the venue's tick toward the entry and checked to lie on the
// exit's side of the fill (exchange.Attached.Resolve). reason is set when
// the exit cannot be sent (a trigger on the wrong side, a percent smaller
// than a tick): it is not sent. MarkLegSent stores what this returns, so
// the resolution happens once.
func (r *LegRunner) resolveExit(ctx context.Context, venue exchange.Venue, leg db.Leg, fill db.ParentFill) (exchange.Order, string, error) {
	o := leg.Order
	if leg.Sends > 0 {
		// A send may have left: the exit stays as first resolved and
		// stored (MarkLegSent), its quantity and trigger. Where exits are
		// orders of their own on the position it is still read again (a
		// resend there follows a "not found" past the venue's accept window
		// at a venue that refuses late requests, or a reopen after a
		// give-up: the first send was never placed, hours may have
		// passed, and the position may be gone).
		if o.PositionBefore == nil || !exchange.AttachesAsLegs(venue) {
			return o, "", nil
		}
		return r.heldExit(ctx, venue, leg, o, fill)
	}
	target := o.ExitTarget()
	if target == nil && o.Exit != exchange.RoleOCO {
		return o, fmt.Sprintf("exit leg %s carries no %s target", leg.ClientOrderID, o.Exit), nil
	}
	if fill.FilledQuantity.Valid && fill.FilledQuantity.Decimal.IsPositive() {
		o.Quantity = fill.FilledQuantity.Decimal
		if o.PositionBefore != nil {
			// Only what the entry opened or added on its side: the part
			// that reduced a position on the other side has nothing to
			// protect (a reversal's exits cover the new position only).
			o.Quantity = exchange.OpenedBy(o.EntrySide(), *o.PositionBefore, o.Quantity)
		}
	}
	// A derivatives exit planned against the position before its entry
	// (PositionBefore) reads the position as it is now, before every send
	// (a resend: heldExit, above): the entry's fill may be recorded
	// minutes after it happened, and the position it opened closed
	// meanwhile (the strategy's close, a hand close, a halt). A
	// reduce-only exit on a flat position would cut the symbol's next one.
	// Only where exits are separate orders on the position (Binance
	// USDⓈ-M): Bybit's trailing stop is the position's own setting, read by
	// its adapter at send (a position not shown yet waits), and OKX refuses
	// a reduce-only algo order with no position.
	current := o.PositionBefore != nil && exchange.AttachesAsLegs(venue)
	var facts exchange.SizingFacts
	if sizer, ok := venue.(exchange.Sizer); ok {
		vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
		var err error
		facts, err = sizer.SizingFacts(vctx, o, exchange.SizingNeed{Position: current})
		cancel()
		if err != nil {
			return o, "", fmt.Errorf("exit leg %s: the venue's tick: %w", leg.ClientOrderID, err)
		}
		if current {
			var reason string
			if o, reason, err = capToHeld(leg, o, fill, facts); err != nil || reason != "" {
				return o, reason, err
			}
		}
	}
	tick := facts.Tick
	if o.Exit == exchange.RoleOCO {
		return resolveOCO(o, fill, facts)
	}
	switch {
	case exchange.ExitsAsOneList(venue):
		// A lone spot exit sells the coins the entry brought, as the OCO
		// does.
		var reason string
		if o.Quantity, reason = received(o, fill, facts); reason != "" {
			return o, reason, nil
		}
	case facts.MinQty.IsPositive() && o.Quantity.LessThan(facts.MinQty):
		// An entry that ended after a small partial fill (migration
		// 00018): the venue would refuse the exit.
		return o, fmt.Sprintf("exit leg %s: the entry filled %s, below the venue's minimum %s", leg.ClientOrderID, o.Quantity, facts.MinQty), nil
	}
	resolved, err := target.Resolve(o.Exit, fill.Side, fill.FillPrice.Decimal, tick)
	if err != nil {
		return o, err.Error(), nil
	}
	switch o.Exit {
	case exchange.RoleTakeProfit:
		o.TakeProfit = &resolved
	case exchange.RoleStopLoss:
		o.StopLoss = &resolved
	default:
		o.TrailingStop = &resolved
	}
	return o, "", nil
}

// heldExit is the resend of an exit already resolved (leg.Sends > 0), o as
// stored, where exits are orders of their own on the position
// (exchange.AttachesAsLegs): the position is read again and the exit
// refused when it is closed or on the other side, or capped to what is
// held, as before its first send (capToHeld). Its trigger is kept.
func (r *LegRunner) heldExit(ctx context.Context, venue exchange.Venue, leg db.Leg, o exchange.Order, fill db.ParentFill) (exchange.Order, string, error) {
	sizer, ok := venue.(exchange.Sizer)
	if !ok {
		return o, "", nil
	}
	vctx, cancel := context.WithTimeout(ctx, r.cfg.Timing.VenueTimeout)
	facts, err := sizer.SizingFacts(vctx, o, exchange.SizingNeed{Position: true})
	cancel()
	if err != nil {
		return o, "", fmt.Errorf("exit leg %s: the venue's position: %w", leg.ClientOrderID, err)
	}
	o, reason, err := capToHeld(leg, o, fill, facts)
	if err != nil || reason != "" {
		return o, reason, err
	}
	if facts.MinQty.IsPositive() && o.Quantity.LessThan(facts.MinQty) {
		return o, fmt.Sprintf("exit leg %s: the %s position left (%s) is below the venue's minimum %s", leg.ClientOrderID, o.Symbol, o.Quantity, facts.MinQty), nil
	}
	return o, "", nil
}

// capToHeld checks exit o against the position facts read now: reason is
// set when the position it was to protect is closed or on the other side
// (a reduce-only exit on it would cut the next position), and o's quantity
// is capped to what is held. A read showing less than o within
// exitPositionLag of the entry's fill being recorded is ErrNotYet: Binance's
// position read may lag a fill just recorded.
func capToHeld(leg db.Leg, o exchange.Order, fill db.ParentFill, facts exchange.SizingFacts) (exchange.Order, string, error) {
	held := facts.Position
	if o.EntrySide() == "sell" {
		held = held.Neg()
	}
	if held.LessThan(o.Quantity) && fill.RecordedAgo < exitPositionLag {
		// positionRisk is not timely on its own: read it again on a later
		// pass before refusing or capping for good.
		return o, "", fmt.Errorf("exit leg %s: %w: the position (%s) does not show the entry's fill yet", leg.ClientOrderID, ErrNotYet, facts.Position)
	}
	if !held.IsPositive() {
		return o, fmt.Sprintf("the %s position this %s was to protect is closed: not placed (a reduce-only exit on it would cut the next position)",
			o.Symbol, o.Exit), nil
	}
	o.Quantity = decimal.Min(o.Quantity, held)
	return o, "", nil
}

// received is what a spot entry brought the account, which its exits
// sell: o's quantity (the entry's filled quantity) less a commission
// charged in the coin bought (the spot ledger's orders.fee, fee_asset),
// rounded down to the step. reason says why it cannot be sold (nothing
// left, or below the venue's minimum).
func received(o exchange.Order, fill db.ParentFill, facts exchange.SizingFacts) (decimal.Decimal, string) {
	q := o.Quantity
	if fill.Fee.Valid && fill.FeeAsset != "" && fill.FeeAsset == facts.BaseAsset {
		q = q.Sub(fill.Fee.Decimal)
	}
	if facts.Step.IsPositive() {
		q = q.Div(facts.Step).Floor().Mul(facts.Step)
	}
	if !q.IsPositive() || q.LessThan(facts.MinQty) {
		return q, fmt.Sprintf("exit %s: the entry received %s net of its fee, below the venue's minimum %s", o.ClientOrderID, q, facts.MinQty)
	}
	return q, ""
}

// resolveOCO resolves an OCO exit (exchange.RoleOCO: one order list with
// a take-profit and a stop-loss or trailing stop, Binance spot): each
// price target from the entry's fill price as resolveExit does, and the
// quantity to what the entry received — its filled quantity less a fee
// charged in the coin it bought (the spot ledger's orders.fee, fee_asset)
// — rounded down to the step: the list sells the coins the entry brought,
// never more than the account got.
func resolveOCO(o exchange.Order, fill db.ParentFill, facts exchange.SizingFacts) (exchange.Order, string, error) {
	if o.TakeProfit == nil || (o.StopLoss == nil && o.TrailingStop == nil) {
		return o, fmt.Sprintf("OCO exit %s needs a take-profit and a stop-loss or trailing stop", o.ClientOrderID), nil
	}
	var reason string
	if o.Quantity, reason = received(o, fill, facts); reason != "" {
		return o, reason, nil
	}
	tp, err := o.TakeProfit.Resolve(exchange.RoleTakeProfit, fill.Side, fill.FillPrice.Decimal, facts.Tick)
	if err != nil {
		return o, err.Error(), nil
	}
	o.TakeProfit = &tp
	if o.StopLoss != nil {
		sl, err := o.StopLoss.Resolve(exchange.RoleStopLoss, fill.Side, fill.FillPrice.Decimal, facts.Tick)
		if err != nil {
			return o, err.Error(), nil
		}
		o.StopLoss = &sl
	}
	// A trailing stop needs no resolution: the list's stop order trails by
	// its percent (Binance spot: trailingDelta).
	return o, "", nil
}
