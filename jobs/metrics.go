package jobs

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
)

// Metrics are the background work's Prometheus instruments.
type Metrics struct {
	// PurgedRows counts rows the purge deleted, by table (trace_ids,
	// trace_events: the audit rows of trace_history past the retention).
	PurgedRows *prometheus.CounterVec
	// JobFailures counts River job attempts that returned an error or
	// panicked, by job kind: a rising rate means a venue or the database is
	// failing the background work.
	JobFailures *prometheus.CounterVec
	// Reconciles counts how reconciling traces ended: adopted (the venue
	// held the order), placed (it did not, and the signal was young enough),
	// stale (not found and too old: failed, nothing placed), exhausted (the
	// venue stayed unreachable: failed, fate unknown).
	Reconciles *prometheus.CounterVec
	// Sweeps counts what the sweeper settled, by outcome: adopted (a dead
	// attempt's order recorded), not_placed (a bare intent closed, no
	// trace), mismatch, failed (a trace ended failed — an orphaned
	// reconcile, or a venue that could not be asked: an operator must
	// check the venue), resolved (an unknown order proven absent),
	// left_open (a dead Bybit attempt's order not found, left for the
	// signal's resend: counted once, not settled).
	Sweeps *prometheus.CounterVec
}

// NewMetrics builds the instruments and registers them on reg when it is
// not nil.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		PurgedRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_purged_rows_total", Help: "Rows deleted by the purge, by table.",
		}, []string{"table"}),
		JobFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_river_job_failures_total", Help: "River job attempts that failed or panicked, by kind.",
		}, []string{"kind"}),
		Reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_reconciles_total", Help: "Reconciling traces resolved, by outcome.",
		}, []string{"outcome"}),
		Sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_sweeps_total", Help: "Stranded intents and orphaned reconciles settled by the sweeper, by outcome.",
		}, []string{"outcome"}),
	}
	// Every series exists from the start, at zero, so a dashboard or an
	// alert on "failures > 0" sees the metric before the first incident.
	for _, table := range []string{"trace_ids", "trace_events"} {
		m.PurgedRows.WithLabelValues(table)
	}
	for _, kind := range []string{(PurgeArgs{}).Kind(), (ReconcileArgs{}).Kind(), (SweepArgs{}).Kind()} {
		m.JobFailures.WithLabelValues(kind)
	}
	for _, outcome := range []string{outcomeAdopted, outcomePlaced, outcomeStale, outcomeHalted, outcomeMismatch, outcomeExhausted} {
		m.Reconciles.WithLabelValues(outcome)
	}
	for _, outcome := range []string{sweepAdopted, sweepNotPlaced, sweepMismatch, sweepFailed, sweepLeftOpen} {
		m.Sweeps.WithLabelValues(outcome)
	}
	if reg != nil {
		reg.MustRegister(m.PurgedRows, m.JobFailures, m.Reconciles, m.Sweeps)
	}
	return m
}

// ObservePurge counts a purge's deletions; the admin purge calls it too, so
// the counter covers every purge this process ran.
func (m *Metrics) ObservePurge(r db.PurgeResult) {
	m.PurgedRows.WithLabelValues("trace_ids").Add(float64(r.Traces))
	m.PurgedRows.WithLabelValues("trace_events").Add(float64(r.Events))
}

// failureCounter is River's ErrorHandler: it counts failed attempts and
// leaves retrying to River's policy. River logs the error itself.
type failureCounter struct{ metrics *Metrics }

func (f *failureCounter) HandleError(_ context.Context, job *rivertype.JobRow, _ error) *river.ErrorHandlerResult {
	f.metrics.JobFailures.WithLabelValues(job.Kind).Inc()
	return nil
}

func (f *failureCounter) HandlePanic(_ context.Context, job *rivertype.JobRow, _ any, _ string) *river.ErrorHandlerResult {
	f.metrics.JobFailures.WithLabelValues(job.Kind).Inc()
	return nil
}

// orDefaults lets workers be built without a logger or metrics (tests,
// one-off tools).
func orDefaults(logger *slog.Logger, metrics *Metrics) (*slog.Logger, *Metrics) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics = NewMetrics(nil)
	}
	return logger, metrics
}
