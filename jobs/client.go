package jobs

import (
	"errors"
	"fmt"
	"log/slog"

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
	// PurgePacer, when set, paces the purge by the signals' own latency
	// (an *internal/pace.Tracker the gateway reports to) instead of
	// db.DefaultPurgeDuty. It sees the signals of this replica, the one
	// whose River client runs the purge.
	PurgePacer db.Pacer
	// AfterLeg, when set, runs between the venue's answer for a leg the
	// follow job places (a limit entry's exits, once it filled or ended
	// after a partial fill) and its record: the crash drill kills the
	// process there.
	AfterLeg func(clientOrderID string)
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
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("river client: %w", err)
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
	purge := NewPurgeWorker(pool, db.PurgeParams{Batch: cfg.PurgeBatch, AuditRetention: cfg.AuditRetention, Duty: db.DefaultPurgeDuty,
		Pacer: deps.PurgePacer}, logger, metrics)
	if err := river.AddWorkerSafely(workers, purge); err != nil {
		return nil, fmt.Errorf("register purge worker: %w", err)
	}
	reconcile := NewReconcileWorker(pool, deps.IntentPool, cfg, deps.Venues, logger, metrics)
	reconcile.notifier = deps.Notifier
	reconcile.legs.WithNotifier(deps.Notifier, nil)
	if err := river.AddWorkerSafely(workers, reconcile); err != nil {
		return nil, fmt.Errorf("register reconcile worker: %w", err)
	}
	sweeper := NewSweepWorker(pool, cfg, deps.Venues, logger, metrics)
	sweeper.notifier = deps.Notifier
	sweeper.legs.WithNotifier(deps.Notifier, nil)
	if err := river.AddWorkerSafely(workers, sweeper); err != nil {
		return nil, fmt.Errorf("register sweep worker: %w", err)
	}
	follow := NewFollowWorker(pool, cfg, deps.Venues, logger, deps.Notifier)
	follow.legs.afterVenue = deps.AfterLeg
	if err := river.AddWorkerSafely(workers, follow); err != nil {
		return nil, fmt.Errorf("register follow worker: %w", err)
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
		// Set both: River refuses a rescue horizon below JobTimeout.
		JobTimeout:           riverJobTimeout,
		RescueStuckJobsAfter: cfg.rescueStuckAfter(),
		PollOnly:             cfg.PollOnly,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault: {MaxWorkers: cfg.Workers},
			QueuePurge:         {MaxWorkers: 1},
			QueueSweep:         {MaxWorkers: 1},
			QueueFollow:        {MaxWorkers: FollowWorkers},
			NotifyQueue:        NotifyQueueConfig(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	return client, nil
}
