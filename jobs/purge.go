package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
)

// purgeTimeout bounds one purge job. Every batch commits on its own, so a
// purge cut off here loses nothing: the next run carries on.
const purgeTimeout = 10 * time.Minute

// PurgeArgs asks for one purge of expired trace IDs and old audit rows. The
// River leader inserts it every PurgeInterval.
type PurgeArgs struct {
	// Scheduler is the River client ID of the leader that scheduled the
	// purge, so an operator can see which replica did.
	Scheduler string `json:"scheduler,omitempty"`
	// RequestedBy names who asked for a purge on demand (POST
	// /admin/purge: "admin"); it is recorded as the purge's actor.
	RequestedBy string `json:"requested_by,omitempty"`
}

// Kind names the job in River's tables.
func (PurgeArgs) Kind() string { return "purge" }

// InsertOpts put the purge on its own queue with a single attempt: the next
// periodic run is the retry, and failed attempts must not pile up behind it.
// At most one purge is queued or running at a time, whoever asked for it
// (the leader's schedule, an admin): a request while one is pending or
// running gets that one (river's UniqueSkippedAsDuplicate), so purges never
// queue up behind a long one.
func (PurgeArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: QueuePurge, MaxAttempts: 1, UniqueOpts: river.UniqueOpts{
		ByState: []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStatePending,
			rivertype.JobStateRunning, rivertype.JobStateScheduled, rivertype.JobStateRetryable},
	}}
}

// PurgeWorker runs db.Purge, the same code as `hoox purge` and
// POST /admin/purge.
type PurgeWorker struct {
	river.WorkerDefaults[PurgeArgs]
	pool    *pgxpool.Pool
	params  db.PurgeParams
	log     *slog.Logger
	metrics *Metrics
}

// NewPurgeWorker returns a worker purging through pool with params. A nil
// logger discards; nil metrics are counted nowhere.
func NewPurgeWorker(pool *pgxpool.Pool, params db.PurgeParams, logger *slog.Logger, metrics *Metrics) *PurgeWorker {
	logger, metrics = orDefaults(logger, metrics)
	if params.Actor == "" {
		params.Actor = "purge job"
	}
	return &PurgeWorker{pool: pool, params: params, log: logger, metrics: metrics}
}

// Timeout lets a purge run longer than River's default minute: a backlog of
// millions of rows takes many batches. Work bounds itself to purgeTimeout;
// River's rescuer, which takes a job for dead only past its worker's
// Timeout, then gives a purge that was merely slow deadMargin to return
// before the purge is discarded and the next one may start.
func (w *PurgeWorker) Timeout(*river.Job[PurgeArgs]) time.Duration { return purgeTimeout + deadMargin }

// Work purges, counts what was removed and records the counts as the job's
// output.
func (w *PurgeWorker) Work(ctx context.Context, job *river.Job[PurgeArgs]) error {
	ctx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	start := time.Now()
	params := w.params
	if job.Args.RequestedBy != "" {
		params.Actor = job.Args.RequestedBy
	}
	res, err := db.Purge(ctx, w.pool, params)
	w.metrics.ObservePurge(res)
	if err != nil {
		return fmt.Errorf("purge: %w", err)
	}
	w.log.InfoContext(ctx, "purge finished", "traces", res.Traces, "events", res.Events,
		"duration", time.Since(start), "paused", time.Duration(res.PausedSeconds*float64(time.Second)).Round(time.Millisecond),
		"job_id", job.ID)
	if err := river.RecordOutput(ctx, res); err != nil {
		return fmt.Errorf("record purge output: %w", err)
	}
	return nil
}
