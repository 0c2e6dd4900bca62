package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/signal"
)

// Reconcile outcomes, as counted in hoox_reconciles_total.
const (
	outcomeAdopted   = "adopted"
	outcomePlaced    = "placed"
	outcomeStale     = "stale"
	outcomeHalted    = "halted"
	outcomeMismatch  = "mismatch"
	outcomeExhausted = "exhausted"
	// outcomeMissed: never seen at a venue that may still fill a late
	// request, so not sent again: the trace ends failed (a missed trade).
	outcomeMissed = "missed"
)

// ReconcileWorker resolves a trace whose order was sent but whose answer was
// lost. It asks the venue by client order ID: an order found that matches is
// adopted; one that does not match (another signal's order under the ID)
// fails the trace. "Not found" counts only once the venue's accept window
// after the last send has closed (until then the job snoozes); then the
// order is placed again under the same client order ID while the signal is
// younger than MaxSignalAge and the kill switch is released, and otherwise
// the trace fails — a stale or halted order is never sent. While the venue
// cannot be reached it returns an error and River retries with backoff; the
// last attempt fails the trace for an operator to check at the venue.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	pool       *pgxpool.Pool
	intentPool *pgxpool.Pool
	cfg        Config
	venues     *exchange.Registry
	log        *slog.Logger
	metrics    *Metrics
	notifier   *Notifier
	legs       *LegRunner
}

// NewReconcileWorker returns a worker recording through pool. intentPool
// commits the intent before a re-placement (a connection besides the one
// holding the trace's lock); nil uses pool. A nil logger discards; nil
// metrics are counted nowhere.
func NewReconcileWorker(pool, intentPool *pgxpool.Pool, cfg Config, venues *exchange.Registry, logger *slog.Logger, metrics *Metrics) *ReconcileWorker {
	logger, metrics = orDefaults(logger, metrics)
	if intentPool == nil {
		intentPool = pool
	}
	return &ReconcileWorker{pool: pool, intentPool: intentPool, cfg: cfg.WithDefaults(), venues: venues, log: logger, metrics: metrics,
		legs: NewLegRunner(pool, intentPool, cfg, venues, logger, nil)}
}

// snooze asks River to run the job again after d, without counting an
// attempt: the venue's accept window is still open.
type snooze struct{ d time.Duration }

func (s *snooze) Error() string { return fmt.Sprintf("venue accept window still open for %s", s.d) }

// Work resolves job.Args' trace in one transaction that holds the trace's
// lock across the venue call (see db.Reconcile).
// Timeout bounds one reconcile: a lookup and at most one placement, each
// bounded by VenueTimeout, and the database work around them. The sweeper
// counts a reconcile `running` for longer (plus a margin) as dead.
func (w *ReconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration {
	return w.cfg.reconcileTimeout()
}

func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	a := job.Args
	final := job.Attempt >= job.MaxAttempts
	var outcome string
	status, err := db.Reconcile(ctx, w.pool, a.TraceID, a.Order.ClientOrderID, w.cfg.LockWait,
		func(ctx context.Context, st db.ReconcileState) (db.Resolution, error) {
			r, o, err := w.resolve(ctx, a, st)
			var sn *snooze
			if err == nil || !final || errors.As(err, &sn) {
				outcome = o
				r.BeforeCommit = chainHooks(w.notifier.notifyHook(r.Event, a.Exchange, a.Mode, a.Order),
					followHook(r.Order, a.Mode, a.Order))
				return r, err
			}
			// The venue stayed out of reach for every attempt: give the
			// trace a final status rather than leave it reconciling
			// forever. Whether an order exists is unknown, so say where to
			// look.
			outcome = outcomeExhausted
			reason := fmt.Sprintf("venue %s could not be asked after %d attempts (%v); whether order %s exists is unknown: check the venue",
				a.Exchange, job.Attempt, err, a.Order.ClientOrderID)
			w.log.ErrorContext(ctx, "reconcile gave up", "trace_id", a.TraceID,
				"client_order_id", a.Order.ClientOrderID, "attempts", job.Attempt, "error", err)
			r = w.failed(a, reason, db.IntentFailed, map[string]any{"attempts": job.Attempt})
			r.BeforeCommit = w.notifier.notifyHook(r.Event, a.Exchange, a.Mode, a.Order)
			return r, nil
		})
	var sn *snooze
	switch {
	case errors.As(err, &sn):
		return river.JobSnooze(sn.d)
	case errors.Is(err, db.ErrNotFound):
		w.log.WarnContext(ctx, "reconcile: trace is gone (purged); nothing to resolve",
			"trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID)
		return nil
	case err != nil:
		return fmt.Errorf("reconcile trace %s: %w", a.TraceID, err)
	case status == db.TraceSuperseded:
		w.log.WarnContext(ctx, "reconcile: the trace now reconciles another execution's order; this job's is settled",
			"trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID)
		return nil
	case status != db.TraceReconciling:
		w.log.InfoContext(ctx, "reconcile: trace already settled", "trace_id", a.TraceID, "status", status)
		return nil
	}
	w.metrics.Reconciles.WithLabelValues(outcome).Inc()
	w.log.InfoContext(ctx, "reconciled", "trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID,
		"outcome", outcome, "attempt", job.Attempt)
	if len(a.Order.Legs) > 0 {
		// The primary is recorded (its legs planned if it filled): place
		// them now rather than after a sweep. What cannot be decided now
		// is the sweeper's.
		if _, err := w.legs.Finish(ctx, db.LockKeyOf(a.TraceID), a.Order.ClientOrderID); err != nil {
			w.log.WarnContext(ctx, "reconcile: legs left for the sweeper", "trace_id", a.TraceID, "error", err)
		}
	}
	return nil
}

// resolve asks the venue and says how the trace ends. An error means the
// venue could not give a final answer: retry later (a *snooze: at a time).
func (w *ReconcileWorker) resolve(ctx context.Context, a ReconcileArgs, st db.ReconcileState) (db.Resolution, string, error) {
	venue, ok := w.venues.For(a.Exchange, a.Mode == signal.ModeTest)
	if !ok {
		// Another replica may have the venue configured; retry, and let
		// the last attempt fail the trace.
		return db.Resolution{}, "", fmt.Errorf("venue %q is not configured on this replica", a.Exchange)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timing.VenueTimeout)
	defer cancel()

	report, err := venue.Lookup(ctx, a.Order)
	switch {
	case err == nil:
		elapsed := st.SentAgo
		if st.SentAt.IsZero() {
			elapsed = st.Age
		}
		if stillExecuting(a.Order, report) {
			if elapsed < followOpenMarket {
				// A market order still executing (NEW, PARTIALLY_FILLED):
				// what it executes is not known yet, so it is not final.
				return db.Resolution{}, "", &snooze{d: openMarketBackoff(elapsed)}
			}
			w.log.ErrorContext(ctx, "reconcile: market order still open at the venue; recorded open", "trace_id", a.TraceID,
				"client_order_id", a.Order.ClientOrderID, "followed_for", elapsed)
		}
		return w.recorded(a, report, true), outcomeAdopted, nil
	case errors.Is(err, exchange.ErrMismatch):
		return w.mismatch(ctx, a, err), outcomeMismatch, nil
	case !errors.Is(err, exchange.ErrNotFound):
		w.venues.NoteError(a.Exchange, err, w.cfg.Timing.Clock())
		return db.Resolution{}, "", fmt.Errorf("look up order %s: %w", a.Order.ClientOrderID, err)
	}

	if window := venue.AcceptWindow(); !st.SentAt.IsZero() && st.SentAgo < window {
		// The request that lost its answer may still be accepted and
		// lookups may lag it: "not found" proves nothing yet. Judged by
		// Postgres's clock, which stamped the send.
		return db.Resolution{}, "", &snooze{d: window - st.SentAgo + 100*time.Millisecond}
	}
	if !exchange.ResendsSameID(venue, a.Order) {
		// Not found past the window proves nothing at a venue that may
		// still fill a late request (Binance spot): sending again could
		// double the order. A missed trade, for an operator; the intent
		// stays unknown, so the key is not freed.
		w.log.ErrorContext(ctx, "reconcile: order never seen at a venue that may fill late; not re-sent", "trace_id", a.TraceID,
			"client_order_id", a.Order.ClientOrderID, "exchange", a.Exchange)
		return w.failed(a, missedReason(a.Order.ClientOrderID, a.Exchange), db.IntentFailed, nil), outcomeMissed, nil
	}
	// Not sent again: the intent's outcome frees the key for a new ID only
	// where "not found" proves the order absent (RefusesLateOrder). At a
	// venue that keeps IDs but may book a create late (Bybit) the order may
	// still appear: the intent stays unknown, so a resend looks it up first
	// instead of placing a second one beside it.
	notSent := db.IntentNotPlaced
	if !exchange.RefusesLateOrder(venue, a.Order) {
		notSent = db.IntentFailed
	}
	if st.KillSwitch {
		return w.halted(ctx, a, notSent), outcomeHalted, nil
	}
	if age := st.Age; age >= w.cfg.Timing.MaxSignalAge {
		w.log.ErrorContext(ctx, "reconcile: stale signal not placed", "trace_id", a.TraceID,
			"client_order_id", a.Order.ClientOrderID, "age", age, "max_signal_age", w.cfg.Timing.MaxSignalAge)
		return w.failed(a, fmt.Sprintf("the venue holds no order %s and the signal is %s old, past the %s limit for placing: not sent",
			a.Order.ClientOrderID, age.Round(time.Millisecond), w.cfg.Timing.MaxSignalAge), notSent, nil), outcomeStale, nil
	}

	// Durable before the venue sees the order again, so a crash from here
	// on leaves the window to wait for. The re-arm reads the kill switch
	// again in its own statement: the lookup above may have taken up to
	// HOOX_VENUE_TIMEOUT, and an operator told "engaged" in the meantime
	// gets no order placed after that answer.
	switch _, err := db.TouchIntent(ctx, w.intentPool, a.Order.ClientOrderID, st.Attempts); {
	case errors.Is(err, db.ErrKillSwitch):
		return w.halted(ctx, a, notSent), outcomeHalted, nil
	case err != nil:
		return db.Resolution{}, "", fmt.Errorf("re-arm intent %s: %w", a.Order.ClientOrderID, err)
	}
	// The same client order ID: if the first attempt's order reaches the
	// venue after all, the venue refuses this one as a duplicate and
	// PlaceOrAdopt adopts it. Place may read the venue again first (the
	// position, the leverage): the adapter then reads the switch once
	// more right before the order's request (db.SendGuard).
	pctx := exchange.WithSendGuard(ctx, db.SendGuard(w.intentPool))
	report, adopted, err := exchange.PlaceOrAdopt(pctx, venue, a.Order, false)
	switch {
	case errors.Is(err, db.ErrKillSwitch):
		// Engaged during Place's own reads: nothing was sent.
		return w.halted(ctx, a, notSent), outcomeHalted, nil
	case errors.Is(err, exchange.ErrMismatch):
		return w.mismatch(ctx, a, err), outcomeMismatch, nil
	case err != nil:
		w.venues.NoteError(a.Exchange, err, w.cfg.Timing.Clock())
		return db.Resolution{}, "", err
	case adopted:
		return w.recorded(a, report, true), outcomeAdopted, nil
	}
	return w.recorded(a, report, false), outcomePlaced, nil
}

// halted fails a trace whose order the venue does not hold while trading
// is halted by the kill switch; notSent settles its intent.
func (w *ReconcileWorker) halted(ctx context.Context, a ReconcileArgs, notSent db.IntentOutcome) db.Resolution {
	w.log.ErrorContext(ctx, "reconcile: kill switch engaged; not placed", "trace_id", a.TraceID,
		"client_order_id", a.Order.ClientOrderID)
	return w.failed(a, fmt.Sprintf("the venue holds no order %s and trading is halted by the kill switch: not sent", a.Order.ClientOrderID),
		notSent, nil)
}

// followOpenMarket bounds how long a reconcile or the sweeper keeps
// following a market order the venue still reports open (measured from its
// last send by Postgres's clock); past it the order is recorded as the
// venue reports it, open with what has executed, and an error is logged.
const followOpenMarket = 5 * time.Minute

// stillExecuting reports whether r is a market order the venue has not
// finished executing: recording it would fix a status and quantity that
// are still changing. A limit order resting open is final as it is.
func stillExecuting(o exchange.Order, r exchange.Report) bool {
	return o.OrderType == "market" && r.Status == exchange.StatusOpen
}

// openMarketBackoff is the wait before looking at a still-executing market
// order again: half its age, between 1 s and 30 s.
func openMarketBackoff(elapsed time.Duration) time.Duration {
	return min(max(elapsed/2, time.Second), 30*time.Second)
}

// missedReason is the failed reason of an order never seen at a venue that
// may still fill a late request.
func missedReason(clientOrderID, venue string) string {
	return fmt.Sprintf("order %s was never seen at the venue; not re-sent because %s may still fill a late request: check the venue",
		clientOrderID, venue)
}

// mismatch fails a trace whose client order ID holds another signal's order
// at the venue: adopting it would record an order this signal never made.
func (w *ReconcileWorker) mismatch(ctx context.Context, a ReconcileArgs, err error) db.Resolution {
	w.log.ErrorContext(ctx, "reconcile: the venue holds a different order under the client order id; not adopted",
		"trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID, "error", err)
	return w.failed(a, fmt.Sprintf("the venue holds a different order under %s (%v): not adopted, nothing placed", a.Order.ClientOrderID, err),
		db.IntentKeyReused, nil)
}

// failed ends the trace failed with reason.
func (w *ReconcileWorker) failed(a ReconcileArgs, reason string, intentOutcome db.IntentOutcome, extra map[string]any) db.Resolution {
	detail := map[string]any{"reason": reason, "client_order_id": a.Order.ClientOrderID}
	for k, v := range extra {
		detail[k] = v
	}
	return db.Resolution{Status: db.TraceFailed, IntentOutcome: intentOutcome,
		Event: db.Event{TraceID: a.TraceID, Event: db.EventFailed, Detail: detail}}
}

// recorded is the resolution for an order the venue holds or just took.
func (w *ReconcileWorker) recorded(a ReconcileArgs, r exchange.Report, adopted bool) db.Resolution {
	rec := db.RecordReport(a.TraceID, a.Exchange, a.Mode, a.Order, r)
	rec.Detail["adopted"] = adopted
	if !adopted {
		rec.Detail["placed"] = true
	}
	return db.Resolution{Status: rec.Status, Order: rec.Order, IntentOutcome: rec.IntentOutcome,
		Event: db.Event{TraceID: a.TraceID, Event: db.EventReconciled, Detail: rec.Detail}}
}
