package jobs

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/notify"
)

// QueuePurge is the purge's own queue, worked one job at a time, so a long
// purge never holds back a reconcile and two purges never run side by side
// on one replica.
const QueuePurge = "purge"

// QueueSweep is the sweeper's own queue, one job at a time, so a long purge
// never delays recovering a dead attempt's order.
const QueueSweep = "sweep"

// Config holds the background work's settings. Zero values take the
// defaults of DefaultConfig.
type Config struct {
	// PurgeInterval is how often the leader schedules a purge
	// (HOOX_PURGE_INTERVAL). River refuses periodic jobs more frequent than
	// one second.
	PurgeInterval time.Duration
	// PurgeBatch is the most rows one purge transaction deletes
	// (HOOX_PURGE_BATCH).
	PurgeBatch int
	// AuditRetention is how long audit rows are kept (HOOX_AUDIT_RETENTION);
	// zero keeps them forever, so it is not defaulted.
	AuditRetention time.Duration
	// MaxSignalAge is the oldest signal a reconcile may still place
	// (HOOX_MAX_SIGNAL_AGE): past it, a stale market order is never sent.
	MaxSignalAge time.Duration
	// VenueTimeout bounds one venue call of a reconcile (HOOX_VENUE_TIMEOUT).
	VenueTimeout time.Duration
	// LockWait is how long a reconcile waits for a trace another transaction
	// holds before retrying later.
	LockWait time.Duration
	// Workers is how many reconciles one replica runs at once. Each holds a
	// connection of the pool across its venue call, so it is kept well
	// below the pool's size: lost answers must not starve the gateway.
	Workers int
	// StopTimeout is how long Stop lets running jobs finish before their
	// contexts are cancelled (River's SoftStopTimeout). A cancelled
	// reconcile rolls back and runs again on the next start or replica.
	StopTimeout time.Duration
	// PollOnly makes River poll for work instead of using LISTEN/NOTIFY,
	// which a transaction-pooling PgBouncer cannot carry
	// (HOOX_TRANSACTION_POOLER).
	PollOnly bool
	// SweepInterval is how often the leader sweeps for stranded intents and
	// orphaned reconciles (HOOX_SWEEP_INTERVAL).
	SweepInterval time.Duration
	// SweepGrace is how old an open intent (or an untouched reconciling
	// trace) must be before the sweeper takes it (HOOX_SWEEP_GRACE): longer
	// than any live attempt, which holds the trace's lock anyway.
	SweepGrace time.Duration
	// SweepGiveUp is how long the sweeper keeps asking an unreachable venue
	// about a stranded intent before it fails the trace for an operator.
	SweepGiveUp time.Duration
	// TraceTTL is the TTL of a trace the sweeper creates for a dead
	// attempt's order (HOOX_TRACE_TTL).
	TraceTTL time.Duration
	// ClientID names this replica in River's tables (river_leader, the jobs
	// it works); River derives one from the host name and start time when
	// empty.
	ClientID string
}

// DefaultConfig is DESIGN.md's defaults.
func DefaultConfig() Config {
	return Config{
		PurgeInterval:  time.Minute,
		PurgeBatch:     db.DefaultPurgeBatch,
		AuditRetention: 90 * 24 * time.Hour,
		MaxSignalAge:   30 * time.Second,
		VenueTimeout:   10 * time.Second,
		LockWait:       5 * time.Second,
		Workers:        4,
		StopTimeout:    10 * time.Second,
		SweepInterval:  30 * time.Second,
		SweepGrace:     30 * time.Second,
		SweepGiveUp:    time.Hour,
		TraceTTL:       24 * time.Hour,
	}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.PurgeInterval <= 0 {
		c.PurgeInterval = d.PurgeInterval
	}
	if c.PurgeBatch <= 0 {
		c.PurgeBatch = d.PurgeBatch
	}
	if c.MaxSignalAge <= 0 {
		c.MaxSignalAge = d.MaxSignalAge
	}
	if c.VenueTimeout <= 0 {
		c.VenueTimeout = d.VenueTimeout
	}
	if c.LockWait <= 0 {
		c.LockWait = d.LockWait
	}
	if c.Workers <= 0 {
		c.Workers = d.Workers
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = d.StopTimeout
	}
	if c.SweepInterval <= 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.SweepGrace <= 0 {
		c.SweepGrace = d.SweepGrace
	}
	if c.SweepGiveUp <= 0 {
		c.SweepGiveUp = d.SweepGiveUp
	}
	if c.TraceTTL <= 0 {
		c.TraceTTL = d.TraceTTL
	}
	return c
}

// Deps are the background work's collaborators.
type Deps struct {
	// Venues resolves a reconcile's exchange; required.
	Venues *exchange.Registry
	// IntentPool commits intents on a connection besides the one a
	// reconcile or sweep holds (the gateway's marker pool); nil uses the
	// client's pool.
	IntentPool *pgxpool.Pool
	// Notifier queues notifications with the events the reconcile and the
	// sweeper record; nil queues none.
	Notifier *Notifier
	// NotifySender delivers queued notifications (a *notify.Client); nil
	// builds one from nothing, which refuses every channel: set it whenever
	// Notifier has channels.
	NotifySender NotifySender
	// NotifyMetrics, when set, count deliveries; built on Registry
	// otherwise.
	NotifyMetrics *NotifyMetrics
	// Logger receives River's own log and the workers'; discarded when nil.
	Logger *slog.Logger
	// Registry, when set, gets the job metrics (see NewMetrics). Ignored
	// when Metrics is given.
	Registry prometheus.Registerer
	// Metrics, when set, are used instead of building new ones, so the
	// admin purge can count into the same hoox_purged_rows_total.
	Metrics *Metrics
}

// NewClient returns a River client, not yet started, on the pgx driver over
// pool, with the purge and reconcile workers and the periodic purge. Start it
// after the HTTP server is set up and Stop it on shutdown; the gateway uses
// the same client to insert reconcile jobs in its claim transaction.
//
// Every replica runs one, and all of them work reconcile jobs; only the
// River leader (one per database, elected through river_leader and
// re-elected when it goes away) schedules the periodic purge, so any number
// of replicas purge once per interval. The first purge runs as soon as a
// client wins the election (RunOnStart).
func NewClient(pool *pgxpool.Pool, cfg Config, deps Deps) (*river.Client[pgx.Tx], error) {
	if pool == nil {
		return nil, errors.New("river client: no pool")
	}
	if deps.Venues == nil {
		return nil, errors.New("river client: no venues for the reconcile worker")
	}
	cfg = cfg.withDefaults()
	if cfg.PurgeInterval < time.Second {
		return nil, fmt.Errorf("purge interval %s: River runs periodic jobs at most once a second", cfg.PurgeInterval)
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	metrics := deps.Metrics
	if metrics == nil {
		metrics = NewMetrics(deps.Registry)
	}

	workers := river.NewWorkers()
	purge := NewPurgeWorker(pool, db.PurgeParams{Batch: cfg.PurgeBatch, AuditRetention: cfg.AuditRetention, Duty: db.DefaultPurgeDuty}, logger, metrics)
	if err := river.AddWorkerSafely(workers, purge); err != nil {
		return nil, fmt.Errorf("register purge worker: %w", err)
	}
	reconcile := NewReconcileWorker(pool, deps.IntentPool, cfg, deps.Venues, logger, metrics)
	reconcile.notifier = deps.Notifier
	if err := river.AddWorkerSafely(workers, reconcile); err != nil {
		return nil, fmt.Errorf("register reconcile worker: %w", err)
	}
	sweeper := NewSweepWorker(pool, cfg, deps.Venues, logger, metrics)
	sweeper.notifier = deps.Notifier
	if err := river.AddWorkerSafely(workers, sweeper); err != nil {
		return nil, fmt.Errorf("register sweep worker: %w", err)
	}
	// Registered even with no channel configured: River refuses to insert a
	// kind it has no worker for, and that would fail the transaction
	// recording the event.
	sender := deps.NotifySender
	if sender == nil {
		// A client with no channel: it refuses (and River cancels) any job.
		c, err := notify.New(notify.Config{})
		if err != nil {
			return nil, fmt.Errorf("notification client: %w", err)
		}
		sender = c
	}
	notifyMetrics := deps.NotifyMetrics
	if notifyMetrics == nil {
		notifyMetrics = NewNotifyMetrics(deps.Registry)
	}
	if err := river.AddWorkerSafely(workers, NewNotifyWorker(sender, logger, notifyMetrics)); err != nil {
		return nil, fmt.Errorf("register notify worker: %w", err)
	}

	// The constructor runs on the leader only, after Start, so client is
	// set by then; stamping the scheduler's ID lets operators (and the
	// tests) see which replica scheduled each purge.
	var client *river.Client[pgx.Tx]
	schedule := river.NewPeriodicJob(river.PeriodicInterval(cfg.PurgeInterval),
		func() (river.JobArgs, *river.InsertOpts) { return PurgeArgs{Scheduler: client.ID()}, nil },
		&river.PeriodicJobOpts{ID: "purge", RunOnStart: true})
	sweep := river.NewPeriodicJob(river.PeriodicInterval(cfg.SweepInterval),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
		&river.PeriodicJobOpts{ID: "sweep", RunOnStart: true})

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		ID:              cfg.ClientID,
		Logger:          logger,
		ErrorHandler:    &failureCounter{metrics: metrics},
		Workers:         workers,
		PeriodicJobs:    []*river.PeriodicJob{schedule, sweep},
		SoftStopTimeout: cfg.StopTimeout,
		PollOnly:        cfg.PollOnly,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.Workers},
			QueuePurge:         {MaxWorkers: 1},
			QueueSweep:         {MaxWorkers: 1},
			NotifyQueue:        NotifyQueueConfig(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}
