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
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/signal"
)

// FollowMaxAttempts bounds the retries of a follow job that fails on the
// database or whose replica died under it (a venue that cannot be asked
// snoozes instead, without counting an attempt). Each retry waits at most
// FollowMaxInterval (FollowWorker.NextRetry): 1, 16, 81, 256 s, then 5
// minutes, so 6000 attempts span about three weeks, as 25 did with
// River's uncapped backoff ((errors+1)^4 s).
const FollowMaxAttempts = 6000

// QueueFollow is the follow jobs' own queue, so a thousand resting orders
// being looked at never delay a reconcile (whose trace a sender is waiting
// on) in the default queue.
const QueueFollow = "follow"

// FollowWorkers is how many orders one replica looks at at once: each
// holds a connection across its venue request.
const FollowWorkers = 2

// FollowMaxInterval is the longest wait between two looks at an open
// order: a limit order resting for days is asked about every five minutes,
// not kept hot.
const FollowMaxInterval = 5 * time.Minute

// FollowExitHorizon is how long an exit placed as its own order (a
// take-profit, stop-loss or trailing stop leg, an OCO list) is followed:
// an exit may rest for weeks, far past its trace's TTL, and is followed
// past the trace's purge; at this age, still open, it is recorded as no
// longer followed. 80 days stays inside Binance's window for finding an
// algo order at all ("order create time + 90 days < current time": not
// found, trade/rest-api/Query-Algo-Order.md).
const FollowExitHorizon = 80 * 24 * time.Hour

// FollowExitGrace is how long past FollowExitHorizon an exit is still
// looked at while the venue cannot be asked: at the horizon the job asks
// the venue once more (a take-profit may have filled since the last look)
// and unfollows only an exit the venue says is still open; a venue that
// does not answer snoozes the job instead, up to the horizon plus this
// grace (83 days, still inside Binance's 90-day window), after which the
// exit is unfollowed unasked, the lookup's error in the event.
const FollowExitGrace = 3 * 24 * time.Hour

// isExit reports whether role is an exit placed as its own order.
func isExit(role string) bool {
	switch role {
	case exchange.RoleTakeProfit, exchange.RoleStopLoss, exchange.RoleTrailingStop, exchange.RoleOCO:
		return true
	}
	return false
}

// FollowArgs asks the follow worker to follow one open order until the
// venue says it is final. It is inserted with InsertTx in the transaction
// that records the order open (the gateway's claim, a reconcile, the
// sweeper), and is unique per client order ID, so two replicas never
// follow one order at once and a second insert is a no-op.
type FollowArgs struct {
	ClientOrderID string         `json:"client_order_id" river:"unique"`
	TraceID       string         `json:"trace_id"`
	Exchange      string         `json:"exchange"`
	Mode          string         `json:"mode"`
	Order         exchange.Order `json:"order"`
}

// Kind names the job in River's tables.
func (FollowArgs) Kind() string { return "follow" }

// InsertOpts make the job unique per order while it is not finished.
func (FollowArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueueFollow, MaxAttempts: FollowMaxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// FollowInserter is the part of a River client that queues follow jobs;
// *river.Client[pgx.Tx] satisfies it.
type FollowInserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// FollowArgsFor is the follow job of row, the order o recorded as row, or
// false when row is not open (nothing to follow).
func FollowArgsFor(row *db.OrderRow, mode string, o exchange.Order) (FollowArgs, bool) {
	if row == nil || row.Status != string(exchange.StatusOpen) {
		return FollowArgs{}, false
	}
	return FollowArgs{ClientOrderID: row.ClientOrderID, TraceID: row.TraceID, Exchange: row.Exchange, Mode: mode, Order: o}, true
}

// InsertFollowTx queues the follow job of row in tx when row is open: the
// one call every path that records an order makes.
func InsertFollowTx(ctx context.Context, ins FollowInserter, tx pgx.Tx, row *db.OrderRow, mode string, o exchange.Order) error {
	args, ok := FollowArgsFor(row, mode, o)
	if !ok || ins == nil {
		return nil
	}
	if _, err := ins.InsertTx(ctx, tx, args, nil); err != nil {
		return fmt.Errorf("queue follow job of %s: %w", row.ClientOrderID, err)
	}
	return nil
}

// followHook queues row's follow job through the River client working the
// current job (nil when row is not open).
func followHook(row *db.OrderRow, mode string, o exchange.Order) db.TxHook {
	if _, ok := FollowArgsFor(row, mode, o); !ok {
		return nil
	}
	return func(ctx context.Context, tx pgx.Tx) error {
		client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
		if err != nil {
			// Never record an open order that nothing will follow.
			return fmt.Errorf("queue follow job of %s: %w", row.ClientOrderID, err)
		}
		return InsertFollowTx(ctx, client, tx, row, mode, o)
	}
}

// chainHooks runs hooks in order in one transaction.
func chainHooks(hooks ...db.TxHook) db.TxHook {
	return func(ctx context.Context, tx pgx.Tx) error {
		for _, h := range hooks {
			if h == nil {
				continue
			}
			if err := h(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	}
}

// FollowWorker follows an open order to its end. Each run locks the order
// row, asks the venue by client order ID and records what changed — status,
// filled quantity, average price, fee — with an audit event on the order's
// trace and, when the order ends, a notification, all in one commit. While
// the order stays open the job snoozes, longer the older the order is (up to
// FollowMaxInterval). The follow horizon is the order's trace: once the
// purge (or a release) removes it, the job stops and the row keeps its last
// known state.
type FollowWorker struct {
	river.WorkerDefaults[FollowArgs]
	pool     *pgxpool.Pool
	cfg      Config
	venues   *exchange.Registry
	log      *slog.Logger
	notifier *Notifier
	// legs places the legs (an entry's exits, a close's further parts)
	// planned when this job records its order filled.
	legs *LegRunner
	// afterRecord, when set (tests only), runs once a look's commit is
	// done and before the follow-on work: a test stands for a replica
	// killed there.
	afterRecord func()
}

// NewFollowWorker returns a worker recording through pool.
func NewFollowWorker(pool *pgxpool.Pool, cfg Config, venues *exchange.Registry, logger *slog.Logger, notifier *Notifier) *FollowWorker {
	logger, _ = orDefaults(logger, nil)
	return &FollowWorker{pool: pool, cfg: cfg.WithDefaults(), venues: venues, log: logger, notifier: notifier,
		legs: NewLegRunner(pool, nil, cfg, venues, logger, nil).WithNotifier(notifier, nil)}
}

// Timeout bounds one look: a lookup and the writes around it.
func (w *FollowWorker) Timeout(*river.Job[FollowArgs]) time.Duration {
	return w.cfg.reconcileTimeout()
}

// NextRetry is when a follow job that failed, or that River's rescuer
// took from a dead replica, runs again: River's backoff ((errors+1)^4 s,
// so a job rescued a third time waited 81 s and a fifth 10 minutes),
// capped at FollowMaxInterval, the longest an open order ever waits
// between two looks. A rescued job's order may have filled meanwhile, or
// may have been recorded filled by the run that died before its sibling
// exits were cancelled.
func (w *FollowWorker) NextRetry(job *river.Job[FollowArgs]) time.Time {
	next, latest := (&river.DefaultClientRetryPolicy{}).NextRetry(job.JobRow), time.Now().UTC().Add(FollowMaxInterval)
	if next.After(latest) {
		return latest
	}
	return next
}

// orderEnds reports what an order in status st with executed filled calls
// for: filled in full, and ended with something executed (filled, or
// cancelled / expired after a partial fill: either may have planned legs,
// migrations 00015, 00018).
func orderEnds(st exchange.Status, executed decimal.Decimal) (filled, ended bool) {
	return st == exchange.StatusFilled, st.Final() && executed.IsPositive()
}

// stepEnds is orderEnds of what step records of the order; nothing when
// it records no change.
func stepEnds(step db.FollowStep) (filled, ended bool) {
	if u := step.Update; u != nil {
		return orderEnds(u.Status, u.FilledQuantity)
	}
	return false, false
}

// followBackoff is the wait before looking at an open order again: a
// quarter of its age, between 1 s and FollowMaxInterval.
func followBackoff(age time.Duration) time.Duration {
	return min(max(age/4, time.Second), FollowMaxInterval)
}

// Work looks at the order once.
func (w *FollowWorker) Work(ctx context.Context, job *river.Job[FollowArgs]) error {
	a := job.Args
	var wait time.Duration
	var filled, ended, unfollowed bool
	st, err := db.FollowOrder(ctx, w.pool, a.ClientOrderID, w.cfg.LockWait, func(ctx context.Context, st db.FollowState) (db.FollowStep, error) {
		exit := isExit(st.Order.Role)
		switch {
		case st.Order.UnfollowedAt != nil:
			return db.FollowStep{}, nil
		case exit && st.Age >= FollowExitHorizon:
			// The horizon of an exit is its age, not its trace: the
			// trace's purge does not end it (the row and its leg's stored
			// order are all a look needs, and neither is purged). The last
			// look may be minutes (or an outage) old: ask once more before
			// unfollowing, so a fill since then is recorded as usual.
			step, open, err := w.lookOrCancel(ctx, a, st)
			switch {
			case err != nil && st.Age < FollowExitHorizon+FollowExitGrace:
				wait = followBackoff(st.Age)
				w.log.WarnContext(ctx, "follow: venue not asked at the exit's follow horizon; looking again later", "trace_id", a.TraceID,
					"client_order_id", a.ClientOrderID, "exchange", a.Exchange, "error", err, "retry_in", wait)
				return db.FollowStep{}, nil
			case err != nil:
				unfollowed = true
				return w.unfollowStep(a, st, "the venue could not be asked: "+err.Error()), nil
			case !open:
				filled, ended = stepEnds(step)
				return step, nil
			case step.Update != nil:
				// Still open, but changed (a partial fill): record it and
				// look again; the next look, seeing no change, unfollows.
				wait = followBackoff(st.Age)
				return step, nil
			}
			unfollowed = true
			return w.unfollowStep(a, st, "the venue says it is still open"), nil
		case !exit && !st.TraceExists:
			// The follow horizon of an entry is its trace (README): once
			// the purge or a release removed it, look once more (a fill
			// since the last look is recorded, and its exits placed, as
			// usual) and unfollow it if it is still open, with an event
			// and a notification: nobody watches it from now on.
			step, open, err := w.lookOrCancel(ctx, a, st)
			switch {
			case err != nil:
				unfollowed = true
				return w.unfollowStep(a, st, "its trace was purged or released (HOOX_TRACE_TTL); the venue could not be asked: "+err.Error()), nil
			case !open:
				filled, ended = stepEnds(step)
				return step, nil
			}
			unfollowed = true
			gone := w.unfollowStep(a, st, "its trace was purged or released (HOOX_TRACE_TTL) while the venue says it is still open")
			if step.Update != nil {
				// Still open but changed (a partial fill): recorded with
				// the unfollow, which reports what filled.
				gone.Update = step.Update
				gone.Events[0].Detail["filled_quantity"] = step.Update.FilledQuantity.String()
				gone.Events = append(step.Events, gone.Events...)
				gone.BeforeCommit = chainHooks(step.BeforeCommit, w.notifier.notifyHook(gone.Events[len(gone.Events)-1], a.Exchange, a.Mode, a.Order))
			}
			return gone, nil
		}
		step, open, err := w.lookOrCancel(ctx, a, st)
		if err == nil {
			filled, ended = stepEnds(step)
		}
		if open || err != nil {
			wait = followBackoff(st.Age)
		}
		if err != nil {
			// The venue could not be asked: look again later, without
			// spending an attempt (an outage must not end the follow).
			w.log.WarnContext(ctx, "follow: venue not asked; looking again later", "trace_id", a.TraceID,
				"client_order_id", a.ClientOrderID, "exchange", a.Exchange, "error", err, "retry_in", wait)
			return db.FollowStep{}, nil
		}
		return step, nil
	})
	if err == nil && w.afterRecord != nil {
		w.afterRecord()
	}
	if err == nil && st.Order.Status != string(exchange.StatusOpen) {
		// Recorded final before this run: by a run whose replica died
		// after its commit and before the follow-on work below (this is
		// its rescue), or by another path (a cancel, the sweeper). The
		// follow-on work only acts on what is still undone — siblings
		// still recorded open, legs with no outcome, each under its own
		// lock — so it is done again here rather than left to the
		// sibling's own next look (up to FollowMaxInterval) or the
		// sweeper.
		filled, ended = orderEnds(exchange.Status(st.Order.Status), st.Order.FilledQuantity.Decimal)
	}
	switch {
	case errors.Is(err, db.ErrNotFound):
		w.log.WarnContext(ctx, "follow: order not recorded; nothing to follow", "client_order_id", a.ClientOrderID)
		return nil
	case err != nil:
		return fmt.Errorf("follow order %s: %w", a.ClientOrderID, err)
	case filled && isExit(st.Order.Role):
		w.cancelSiblings(ctx, a)
		return followOnCut(ctx, a)
	case ended:
		w.finishLegs(ctx, a)
		return followOnCut(ctx, a)
	case st.Order.Status != string(exchange.StatusOpen):
		return nil
	case unfollowed || st.Order.UnfollowedAt != nil:
		w.log.WarnContext(ctx, "follow: the order is still open at its follow horizon; no longer followed, the venue may still hold it",
			"trace_id", a.TraceID, "client_order_id", a.ClientOrderID, "role", st.Order.Role,
			"filled_quantity", st.Order.FilledQuantity.Decimal.String())
		return nil
	case wait > 0:
		return river.JobSnooze(wait)
	}
	return nil
}

// followOnCut is an error when the run's own context ended (River's
// timeout, a shutdown) during the follow-on work: the job then runs again
// (NextRetry) and, seeing its order final, does what is left, instead of
// completing with a sibling exit still resting.
func followOnCut(ctx context.Context, a FollowArgs) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("follow-on work of order %s cut short: %w", a.ClientOrderID, err)
	}
	return nil
}

// cancelSiblings cancels, once the exit a filled, the other exits of the
// same entry still open (Binance USDⓈ-M: the take-profit's fill leaves
// the stop-loss resting as a reduce-only order that would cut into the
// next position of the symbol), each under its row lock as the cancel
// action does, recorded with an order_cancelled event naming the exit
// that filled. An exit the venue says filled too is recorded filled. One
// that cannot be cancelled now stays open; its own job, seeing a filled
// sibling, cancels it at its next look (lookOrCancel).
func (w *FollowWorker) cancelSiblings(ctx context.Context, a FollowArgs) {
	siblings, err := db.OpenSiblingExits(ctx, w.pool, a.ClientOrderID)
	if err != nil {
		w.log.WarnContext(ctx, "follow: the other exits were not cancelled", "client_order_id", a.ClientOrderID, "error", err)
		return
	}
	for _, sib := range siblings {
		o, err := db.GetLegOrder(ctx, w.pool, sib.ClientOrderID)
		if err == nil {
			_, err = db.FollowOrder(ctx, w.pool, sib.ClientOrderID, w.cfg.LockWait, func(ctx context.Context, st db.FollowState) (db.FollowStep, error) {
				return w.cancelStep(ctx, a.Exchange, a.Mode, o, st, a.ClientOrderID)
			})
		}
		if err != nil {
			w.log.WarnContext(ctx, "follow: an exit whose sibling filled was not cancelled; its own job will",
				"client_order_id", sib.ClientOrderID, "filled_exit", a.ClientOrderID, "error", err)
		}
	}
}

// lookOrCancel is look, except for an exit of an entry whose other exit
// already filled: that one is cancelled instead (cancelStep).
func (w *FollowWorker) lookOrCancel(ctx context.Context, a FollowArgs, st db.FollowState) (db.FollowStep, bool, error) {
	if !isExit(st.Order.Role) || st.Order.Role == exchange.RoleOCO {
		return w.look(ctx, a, st)
	}
	filledBy, err := db.FilledSiblingExit(ctx, w.pool, a.ClientOrderID)
	if err != nil || filledBy == "" {
		return w.look(ctx, a, st)
	}
	step, err := w.cancelStep(ctx, a.Exchange, a.Mode, a.Order, st, filledBy)
	if err != nil {
		return db.FollowStep{}, true, err
	}
	return step, step.Update == nil || !step.Update.Status.Final(), nil
}

// cancelStep cancels the exit o (row st.Order) at the venue because its
// sibling filledBy filled, and returns the step that records what the
// venue answered: cancelled, or as the venue holds it (filled, if it
// executed first).
func (w *FollowWorker) cancelStep(ctx context.Context, exchangeName, mode string, o exchange.Order, st db.FollowState, filledBy string) (db.FollowStep, error) {
	venue, ok := w.venues.For(exchangeName, mode == signal.ModeTest)
	if !ok {
		return db.FollowStep{}, fmt.Errorf("venue %q is not configured on this replica", exchangeName)
	}
	canceler, ok := venue.(exchange.Canceler)
	if !ok {
		return db.FollowStep{}, fmt.Errorf("venue %q cannot cancel", exchangeName)
	}
	vctx, cancel := context.WithTimeout(ctx, w.cfg.Timing.VenueTimeout)
	defer cancel()
	report, err := canceler.Cancel(vctx, o)
	if err != nil {
		w.venues.NoteError(exchangeName, err, w.cfg.Timing.Clock())
		return db.FollowStep{}, fmt.Errorf("cancel exit %s: %w", o.ClientOrderID, err)
	}
	u := db.UpdateFromReport(report)
	if !u.Changes(st.Order) {
		return db.FollowStep{}, nil
	}
	ev, msg := OrderChange(st.Order, mode, o, u, w.notifier)
	ev.Detail["because_filled"] = filledBy
	step := db.FollowStep{Update: &u, Events: []db.Event{ev}}
	if msg != nil {
		n := w.notifier
		step.BeforeCommit = func(ctx context.Context, tx pgx.Tx) error {
			return n.InsertTx(ctx, river.ClientFromContext[pgx.Tx](ctx), tx, *msg)
		}
	}
	return step, nil
}

// look asks the venue about the order and returns the step to record;
// open is true while the order stays open.
func (w *FollowWorker) look(ctx context.Context, a FollowArgs, st db.FollowState) (db.FollowStep, bool, error) {
	venue, ok := w.venues.For(a.Exchange, a.Mode == signal.ModeTest)
	if !ok {
		return db.FollowStep{}, true, fmt.Errorf("venue %q is not configured on this replica", a.Exchange)
	}
	vctx, cancel := context.WithTimeout(ctx, w.cfg.Timing.VenueTimeout)
	defer cancel()
	report, err := venue.Lookup(vctx, a.Order)
	if isExit(st.Order.Role) && exchange.ExitIsSetting(venue, a.Order) && (err == nil && !report.Status.Final() ||
		errors.Is(err, exchange.ErrMismatch) || errors.Is(err, exchange.ErrNotFound)) {
		// A setting the venue drops with its position (a Bybit trailing
		// stop, trading-stop.mdx: "The system will cancel these orders if
		// the position is closed") ended when a close after its send left
		// the position flat — even if the next position holds the same
		// value now, set by a later entry's leg: that one is the later
		// leg's, and this one's cancel must not clear it.
		leg := db.Leg{ClientOrderID: a.ClientOrderID, Role: st.Order.Role, Exchange: a.Exchange, Mode: a.Mode, Order: a.Order}
		closedBy, cerr := db.PositionClosedSince(ctx, w.pool, leg)
		if cerr != nil {
			return db.FollowStep{}, true, fmt.Errorf("look up order %s: %w", a.ClientOrderID, cerr)
		}
		if closedBy != "" {
			report, err = closedSetting(st.Order, closedBy), nil
		}
	}
	if isExit(st.Order.Role) && exchange.ExitIsSetting(venue, a.Order) && errors.Is(err, exchange.ErrMismatch) {
		// Another setting on the position (a Bybit trailing stop of
		// another distance): replaced for good by a later leg of the
		// position (hoox's next entry on the same long), recorded
		// expired; with none, the position no longer holds this one (a
		// hand changed it), and the not-found rule below records it gone.
		// Never kept open as a mismatch: the setting carries no ID, and
		// another distance is no order under this exit's.
		leg := db.Leg{ClientOrderID: a.ClientOrderID, Role: st.Order.Role, Exchange: a.Exchange, Mode: a.Mode, Order: a.Order}
		later, lerr := db.LaterSettingLeg(ctx, w.pool, leg)
		if lerr != nil {
			return db.FollowStep{}, true, fmt.Errorf("look up order %s: %w", a.ClientOrderID, lerr)
		}
		// Recorded open, its send took effect: it can only have been
		// replaced since.
		report, err = settingMismatch(leg, later, true, err)
	}
	if isExit(st.Order.Role) && errors.Is(err, exchange.ErrNotFound) && st.Age > venue.AcceptWindow() {
		// An exit recorded open that the venue no longer holds under its
		// ID (Binance stops finding an algo order cancelled or expired
		// with nothing filled after 3 days, Query-Algo-Order.md; a Bybit
		// trailing stop removed by hand) ended without a fill hoox could
		// see: recorded expired, never looked for again.
		report, err = goneExit(st.Order, err), nil
	}
	if isExit(st.Order.Role) && errors.Is(err, exchange.ErrMismatch) {
		// Something else under the exit's ID — another order, or hoox's
		// own exit read wrongly (a venue that changed the symbol's step
		// while it rested) — proves nothing about the exit: recorded
		// expired, an exit the venue still holds would sell unrecorded
		// and unfollowed. It stays open and followed, with a warning at
		// every look, for an operator to settle (the cancel action, or the
		// exit's follow horizon, which unfollows it with an event).
		w.log.WarnContext(ctx, "follow: the venue holds another order under the exit's id; left open for an operator",
			"trace_id", a.TraceID, "client_order_id", a.ClientOrderID, "exchange", a.Exchange, "role", st.Order.Role, "error", err)
	}
	if err == nil {
		report, err = exchange.ReadFees(vctx, venue, a.Order, report, st.Order.FilledQuantity.Decimal, st.Order.Fee.Valid)
	}
	if err != nil {
		w.venues.NoteError(a.Exchange, err, w.cfg.Timing.Clock())
		return db.FollowStep{}, true, fmt.Errorf("look up order %s: %w", a.ClientOrderID, err)
	}
	u := db.UpdateFromReport(report)
	open := !report.Status.Final()
	if !u.Changes(st.Order) {
		return db.FollowStep{}, open, nil
	}
	ev, msg := OrderChange(st.Order, a.Mode, a.Order, u, w.notifier)
	step := db.FollowStep{Update: &u, Events: []db.Event{ev}}
	if msg != nil {
		n := w.notifier
		step.BeforeCommit = func(ctx context.Context, tx pgx.Tx) error {
			return n.InsertTx(ctx, river.ClientFromContext[pgx.Tx](ctx), tx, *msg)
		}
	}
	return step, open, nil
}

// OrderChange is the audit event that records u on row (on the order's
// trace) and, when the order ended and n sends that event, its
// notification (nil otherwise). The follow job and the cancel action build
// them the same way.
func OrderChange(row db.OrderRow, mode string, o exchange.Order, u db.OrderUpdate, n *Notifier) (db.Event, *notify.Message) {
	ev := db.Event{TraceID: row.TraceID, Event: db.OrderChangeEvent(u.Status), Detail: u.Detail(row)}
	if !u.Status.Final() || !n.Enabled(ev.Event) {
		return ev, nil
	}
	msg := OrderMessage(row, mode, o, u, ev)
	return ev, &msg
}

// OrderMessage is the notification of an order that ended as u says.
func OrderMessage(row db.OrderRow, mode string, o exchange.Order, u db.OrderUpdate, ev db.Event) notify.Message {
	m := TraceMessage(ev, row.Exchange, mode, o)
	m.Symbol, m.ClientOrderID, m.Quantity = row.Symbol, row.ClientOrderID, row.Quantity.String()
	m.Detail = fmt.Sprintf("%s: filled %s of %s", u.Status, u.FilledQuantity, row.Quantity)
	if row.Role != "" && row.Role != exchange.RolePrimary {
		m.Detail = row.Role + " " + m.Detail
	}
	if u.ExecutedExit != "" {
		m.Detail += " (" + u.ExecutedExit + " executed)"
	}
	if u.AvgPrice.Valid {
		m.Detail += " at " + u.AvgPrice.Decimal.String()
	}
	if u.Fee.Valid {
		m.Detail += fmt.Sprintf(", fee %s %s", u.Fee.Decimal, u.FeeAsset)
	}
	return m
}

// finishLegs places the legs planned when the job recorded a's order
// filled (migration 00015's trigger: a limit entry's exits, a close's
// further parts) or cancelled / expired after a partial fill (00018: the
// exits of what filled), so they do not wait for the sweeper's grace. A
// leg it cannot decide now is left to the sweeper, as after the gateway's
// pass.
func (w *FollowWorker) finishLegs(ctx context.Context, a FollowArgs) {
	key, ok, err := db.OpenLegsLockKey(ctx, w.pool, a.ClientOrderID)
	if err == nil && ok {
		_, err = w.legs.Finish(ctx, key, a.ClientOrderID)
	}
	if err != nil {
		w.log.WarnContext(ctx, "follow: legs of the filled order left to the sweeper", "trace_id", a.TraceID,
			"client_order_id", a.ClientOrderID, "error", err)
	}
}

// unfollowStep records the order of st no longer followed at its horizon
// (an exit's age, an entry's trace), why in the event, and notifies it
// (order_unfollowed) in the same commit: an open order nobody watches.
func (w *FollowWorker) unfollowStep(a FollowArgs, st db.FollowState, why string) db.FollowStep {
	detail := map[string]any{"client_order_id": st.Order.ClientOrderID, "role": st.Order.Role,
		"order_status": st.Order.Status, "filled_quantity": st.Order.FilledQuantity.Decimal.String(), "reason": why}
	if isExit(st.Order.Role) {
		detail["horizon"] = FollowExitHorizon.String()
	}
	ev := db.Event{TraceID: st.Order.TraceID, Event: db.EventOrderUnfollowed, Detail: detail}
	return db.FollowStep{Unfollow: true, Events: []db.Event{ev},
		BeforeCommit: w.notifier.notifyHook(ev, a.Exchange, a.Mode, a.Order)}
}

// closedSetting is the report of a position setting (row) that ended
// with its position, closed flat by the close closedBy.
func closedSetting(row db.OrderRow, closedBy string) exchange.Report {
	return exchange.Report{Symbol: row.Symbol, Side: row.Side, Quantity: row.Quantity, FilledQuantity: row.FilledQuantity.Decimal,
		Status: exchange.StatusExpired, Reason: "the position closed (close " + closedBy + " left it flat): the venue drops its settings with it"}
}

// goneExit is the report of the exit row that the venue no longer holds
// (why: the lookup's error): expired, with what it had executed as last
// recorded.
func goneExit(row db.OrderRow, why error) exchange.Report {
	return exchange.Report{Symbol: row.Symbol, Side: row.Side, Quantity: row.Quantity, FilledQuantity: row.FilledQuantity.Decimal,
		Status: exchange.StatusExpired, Reason: "the venue no longer holds the exit: " + why.Error()}
}
