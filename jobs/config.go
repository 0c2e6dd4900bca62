package jobs

import (
	"strconv"
	"time"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/internal/timing"
)

// MinPurgeInterval is River's floor: it refuses periodic jobs more frequent
// than once a second.
const MinPurgeInterval = time.Second

// Config holds the background work's settings. Zero values take the
// defaults of DefaultConfig (see WithDefaults); Validate refuses values that
// would turn a protection off.
type Config struct {
	// PurgeInterval is how often the leader schedules a purge
	// (HOOX_PURGE_INTERVAL). Default 1m; at least MinPurgeInterval.
	PurgeInterval time.Duration
	// PurgeBatch is the most rows one purge transaction deletes
	// (HOOX_PURGE_BATCH). Default db.DefaultPurgeBatch; above zero.
	PurgeBatch int
	// AuditRetention is how long audit rows are kept (HOOX_AUDIT_RETENTION).
	// Default 90 days; zero keeps them forever, so WithDefaults leaves a
	// zero alone. app.Config.Validate also refuses one shorter than the
	// trace TTL: a live trace would lose its audit trail.
	AuditRetention time.Duration
	// LockWait is how long a reconcile waits for a trace another transaction
	// holds before retrying later (HOOX_RECONCILE_LOCK_WAIT). Default 5s;
	// at least 1 ms, since Postgres reads lock_timeout in milliseconds and
	// 0 means wait forever. It is the reconcile's own, not Timing.LockWait
	// (a repeat's).
	LockWait time.Duration
	// Workers is how many reconciles one replica runs at once
	// (HOOX_RECONCILE_WORKERS). Each holds a connection of the pool across
	// its venue call, so it is kept well below the pool's size: lost answers
	// must not starve the gateway. Default 4; at least 1.
	Workers int
	// StopTimeout is how long Stop lets running jobs finish before their
	// contexts are cancelled (River's SoftStopTimeout; HOOX_SHUTDOWN_WAIT).
	// A cancelled reconcile rolls back and runs again on the next start or
	// replica. Default 10s; above zero.
	StopTimeout time.Duration
	// PollOnly makes River poll for work instead of using LISTEN/NOTIFY,
	// which a transaction-pooling PgBouncer cannot carry
	// (HOOX_TRANSACTION_POOLER).
	PollOnly bool
	// SweepInterval is how often the leader sweeps for stranded intents and
	// orphaned reconciles (HOOX_SWEEP_INTERVAL). Default 30s; at least
	// MinPurgeInterval (River's floor).
	SweepInterval time.Duration
	// SweepGrace is how old an open intent (or an untouched reconciling
	// trace) must be before the sweeper takes it (HOOX_SWEEP_GRACE): longer
	// than any live attempt, which holds the trace's lock anyway. Default
	// 30s; above zero.
	SweepGrace time.Duration
	// SweepGiveUp is how long the sweeper keeps asking an unreachable venue
	// about a stranded intent before it fails the trace for an operator.
	// Default 1h.
	SweepGiveUp time.Duration
	// Timing holds the settings the jobs share with other packages: the
	// oldest signal a reconcile may still place (MaxSignalAge), the bound
	// of one venue call of a reconcile or a sweep (VenueTimeout) and the TTL
	// of a trace the sweeper creates for a dead attempt's order (TraceTTL).
	// They are declared, defaulted and validated once, in package timing;
	// internal/app passes the operator's (app.Config.Timing). Validate does
	// not check them.
	Timing timing.Config
	// ClientID names this replica in River's tables (river_leader, the jobs
	// it works); River derives one from the host name and start time when
	// empty.
	ClientID string
}

// DefaultConfig holds the defaults the README's configuration table lists.
func DefaultConfig() Config {
	return Config{
		PurgeInterval:  time.Minute,
		PurgeBatch:     db.DefaultPurgeBatch,
		AuditRetention: 90 * 24 * time.Hour,
		LockWait:       5 * time.Second,
		Workers:        4,
		StopTimeout:    10 * time.Second,
		SweepInterval:  30 * time.Second,
		SweepGrace:     30 * time.Second,
		SweepGiveUp:    time.Hour,
		Timing:         timing.DefaultConfig(),
	}
}

// WithDefaults returns c with every zero field except AuditRetention (zero
// keeps audit rows forever) set to DefaultConfig's. A caller that must
// refuse an explicit zero (cmd/hoox) validates before, not after.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.PurgeInterval == 0 {
		c.PurgeInterval = d.PurgeInterval
	}
	if c.PurgeBatch == 0 {
		c.PurgeBatch = d.PurgeBatch
	}
	if c.LockWait == 0 {
		c.LockWait = d.LockWait
	}
	if c.Workers == 0 {
		c.Workers = d.Workers
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = d.StopTimeout
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.SweepGrace == 0 {
		c.SweepGrace = d.SweepGrace
	}
	if c.SweepGiveUp == 0 {
		c.SweepGiveUp = d.SweepGiveUp
	}
	c.Timing = c.Timing.WithDefaults()
	return c
}

// Validate refuses settings that would disable a protection or that River
// refuses. Its errors are *confcheck.Error values naming the field (Config
// "jobs"), all of them joined. The shared Timing is its owner's to
// validate (timing.Config.Validate).
func (c Config) Validate() error {
	ck := confcheck.New("jobs")
	ck.Duration("PurgeInterval", c.PurgeInterval, MinPurgeInterval, 0,
		": River runs periodic jobs at most once a second")
	if c.PurgeBatch <= 0 {
		ck.Refuse("PurgeBatch", strconv.Itoa(c.PurgeBatch), "must be at least 1 row, or the purge never removes anything")
	}
	if c.AuditRetention < 0 {
		ck.Refuse("AuditRetention", c.AuditRetention.String(), "must be 0 (keep forever) or positive")
	}
	ck.Duration("LockWait", c.LockWait, time.Millisecond, 0,
		": Postgres reads lock_timeout in milliseconds, and a reconcile must give up on a held trace and retry later")
	if c.Workers < 1 {
		ck.Refuse("Workers", strconv.Itoa(c.Workers), "must be at least 1, or no lost answer is ever reconciled")
	}
	ck.Duration("StopTimeout", c.StopTimeout, time.Millisecond, 0,
		"; 0 or less would cancel every running job at once on shutdown")
	ck.Duration("SweepInterval", c.SweepInterval, MinPurgeInterval, 0,
		": River runs periodic jobs at most once a second")
	ck.Duration("SweepGrace", c.SweepGrace, time.Millisecond, 0,
		"; the sweeper must leave a live attempt its time")
	ck.Duration("SweepGiveUp", c.SweepGiveUp, time.Millisecond, 0,
		"; 0 or less would fail a stranded order the first time its venue does not answer")
	return ck.Err()
}

// reconcileTimeout bounds one reconcile job (ReconcileWorker.Timeout): a
// lookup and at most one placement, each bounded by VenueTimeout, and the
// database work around them.
func (c Config) reconcileTimeout() time.Duration { return 2*c.Timing.VenueTimeout + 30*time.Second }

// deadMargin is how long past its Timeout a job may stay `running` before
// it is taken for dead: River cancels the worker's context at the Timeout,
// and the margin lets a live worker that was merely slow return and River
// record its end. A job taken for dead is run again; every kind is safe to
// run twice at once (a follow and a reconcile work under their row's or
// trace's lock and record only what changed, a notification is at least
// once, a sweep overlaps by design), the margin only keeps it rare.
const deadMargin = 15 * time.Second

// rescueStuckAfter is how long a job may stay `running` before River's
// rescuer takes its worker for dead and runs it again (River's
// RescueStuckJobsAfter, an hour by default): the longest Timeout of the
// workers that run minutes at most (the follow, the reconcile, the
// notify, and River's JobTimeout for the sweep), plus deadMargin — 75 s at
// the defaults. River's rescuer never takes a job before its own worker's
// Timeout has passed (makeRetryDecision in river's
// internal/maintenance/job_rescuer.go ignores it until then), so the
// purge, which may run ten minutes, is taken at its own Timeout, which
// carries its margin (PurgeWorker.Timeout). A follow job left `running` by
// a replica killed with -9 blocks its order's follow (the job is unique
// while live): for an hour, then 11 minutes, a fill went unrecorded, its
// sibling exit uncancelled and a spot sale counted in the ledger (the
// simulator's stuck_follow).
func (c Config) rescueStuckAfter() time.Duration {
	return max(c.reconcileTimeout(), NotifyTimeout, riverJobTimeout) + deadMargin
}

// riverJobTimeout is River's JobTimeout for the workers without a Timeout
// of their own (the sweep), River's default.
const riverJobTimeout = time.Minute

// reconcileDeadAfter is how long a reconcile job may stay `running` before
// the sweeper takes its worker for dead: its timeout, plus deadMargin.
func (c Config) reconcileDeadAfter() time.Duration { return c.reconcileTimeout() + deadMargin }
