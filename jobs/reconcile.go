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
	outcomeExhausted = "exhausted"
)

// ReconcileWorker resolves a trace whose order was sent but whose answer was
// lost. It asks the venue by client order ID: an order found is adopted; an
// order not found is placed again under the same client order ID while the
// signal is younger than MaxSignalAge, and otherwise the trace fails — a
// stale market order is never sent. While the venue cannot be reached it
// returns an error and River retries with backoff; the last attempt fails
// the trace for an operator to check at the venue.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	pool    *pgxpool.Pool
	cfg     Config
	venues  *exchange.Registry
	log     *slog.Logger
	metrics *Metrics
}

// NewReconcileWorker returns a worker recording through pool. A nil logger
// discards; nil metrics are counted nowhere.
func NewReconcileWorker(pool *pgxpool.Pool, cfg Config, venues *exchange.Registry, logger *slog.Logger, metrics *Metrics) *ReconcileWorker {
	logger, metrics = orDefaults(logger, metrics)
	return &ReconcileWorker{pool: pool, cfg: cfg.withDefaults(), venues: venues, log: logger, metrics: metrics}
}

// Work resolves job.Args' trace in one transaction that holds the trace's
// lock across the venue call (see db.Reconcile).
func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	a := job.Args
	final := job.Attempt >= job.MaxAttempts
	var outcome string
	status, err := db.Reconcile(ctx, w.pool, a.TraceID, w.cfg.LockWait, func(ctx context.Context) (db.Resolution, error) {
		r, o, err := w.resolve(ctx, a)
		if err == nil || !final {
			outcome = o
			return r, err
		}
		// The venue stayed out of reach for every attempt: give the trace
		// a final status rather than leave it reconciling forever. Whether
		// an order exists is unknown, so say where to look.
		outcome = outcomeExhausted
		reason := fmt.Sprintf("venue %s could not be asked after %d attempts (%v); whether order %s exists is unknown: check the venue",
			a.Exchange, job.Attempt, err, a.Order.ClientOrderID)
		w.log.ErrorContext(ctx, "reconcile gave up", "trace_id", a.TraceID,
			"client_order_id", a.Order.ClientOrderID, "attempts", job.Attempt, "error", err)
		return db.Resolution{Status: db.TraceFailed, Event: db.Event{TraceID: a.TraceID, Event: "failed",
			Detail: map[string]any{"reason": reason, "client_order_id": a.Order.ClientOrderID, "attempts": job.Attempt}}}, nil
	})
	switch {
	case errors.Is(err, db.ErrNotFound):
		w.log.WarnContext(ctx, "reconcile: trace is gone (released or purged); nothing to resolve",
			"trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID)
		return nil
	case err != nil:
		return fmt.Errorf("reconcile trace %s: %w", a.TraceID, err)
	case status != db.TraceReconciling:
		w.log.InfoContext(ctx, "reconcile: trace already settled", "trace_id", a.TraceID, "status", status)
		return nil
	}
	w.metrics.Reconciles.WithLabelValues(outcome).Inc()
	w.log.InfoContext(ctx, "reconciled", "trace_id", a.TraceID, "client_order_id", a.Order.ClientOrderID,
		"outcome", outcome, "attempt", job.Attempt)
	return nil
}

// resolve asks the venue and says how the trace ends. An error means the
// venue could not give a final answer: retry later.
func (w *ReconcileWorker) resolve(ctx context.Context, a ReconcileArgs) (db.Resolution, string, error) {
	venue, ok := w.venues.For(a.Exchange, a.Mode == signal.ModeTest)
	if !ok {
		// Another replica may have the venue configured; retry, and let
		// the last attempt fail the trace.
		return db.Resolution{}, "", fmt.Errorf("venue %q is not configured on this replica", a.Exchange)
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.VenueTimeout)
	defer cancel()

	report, err := venue.Lookup(ctx, a.Order)
	switch {
	case err == nil:
		return w.recorded(a, report, true), outcomeAdopted, nil
	case !errors.Is(err, exchange.ErrNotFound):
		return db.Resolution{}, "", fmt.Errorf("look up order %s: %w", a.Order.ClientOrderID, err)
	}

	if age := time.Since(a.ReceivedAt); age >= w.cfg.MaxSignalAge {
		reason := fmt.Sprintf("the venue holds no order %s and the signal is %s old, past the %s limit for placing: not sent",
			a.Order.ClientOrderID, age.Round(time.Millisecond), w.cfg.MaxSignalAge)
		w.log.ErrorContext(ctx, "reconcile: stale signal not placed", "trace_id", a.TraceID,
			"client_order_id", a.Order.ClientOrderID, "age", age, "max_signal_age", w.cfg.MaxSignalAge)
		return db.Resolution{Status: db.TraceFailed, Event: db.Event{TraceID: a.TraceID, Event: "failed",
			Detail: map[string]any{"reason": reason, "client_order_id": a.Order.ClientOrderID}}}, outcomeStale, nil
	}

	// The same client order ID: if the first attempt's order reaches the
	// venue after all, the venue refuses this one as a duplicate and
	// PlaceOrAdopt adopts it.
	report, adopted, err := exchange.PlaceOrAdopt(ctx, venue, a.Order, false)
	if err != nil {
		return db.Resolution{}, "", err
	}
	if adopted {
		return w.recorded(a, report, true), outcomeAdopted, nil
	}
	return w.recorded(a, report, false), outcomePlaced, nil
}

// recorded is the resolution for an order the venue holds or just took.
func (w *ReconcileWorker) recorded(a ReconcileArgs, r exchange.Report, adopted bool) db.Resolution {
	row := db.NewOrderRow(a.TraceID, a.Exchange, a.Mode, a.Order, r)
	status := db.TraceDispatched
	if r.Status == exchange.StatusRejected {
		status = db.TraceRejected
	}
	detail := map[string]any{"order_id": row.ID, "client_order_id": row.ClientOrderID, "order_status": row.Status,
		"adopted": adopted}
	if !adopted {
		detail["placed"] = true
	}
	if r.Reason != "" {
		detail["reason"] = r.Reason
	}
	return db.Resolution{Status: status, Order: row, Event: db.Event{TraceID: a.TraceID, Event: "reconciled", Detail: detail}}
}
