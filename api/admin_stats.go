package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
)

// outcomeWindow counts audit events (received, duplicate, key_reused,
// dispatched, rejected, reconciling, failed, …) over one window.
type outcomeWindow struct {
	Events map[string]int64 `json:"events"`
	// DuplicateRatio is (duplicate + key_reused) / (received + duplicate +
	// key_reused): the share of arriving signals refused as repeats.
	DuplicateRatio float64 `json:"duplicate_ratio"`
}

// lastPurge is the last purge's summary.
type lastPurge struct {
	At     *time.Time `json:"at"`
	Traces int64      `json:"traces"`
	Events int64      `json:"events"`
}

// statsResponse is GET /admin/stats.
type statsResponse struct {
	LastHour   outcomeWindow `json:"last_hour"`
	LastDay    outcomeWindow `json:"last_day"`
	LiveTraces int64         `json:"live_traces"`
	// OldestTraceAgeSeconds is how long the oldest live trace has been
	// held; a value far past HOOX_TRACE_TTL means the purge is not running.
	OldestTraceAgeSeconds *float64   `json:"oldest_trace_age_seconds"`
	OldestTraceReceivedAt *time.Time `json:"oldest_trace_received_at"`
	LastPurge             *lastPurge `json:"last_purge"`
	KillSwitchEngaged     bool       `json:"kill_switch_engaged"`
	At                    time.Time  `json:"at"`
}

// readStats reads the stats' counts, the last purge and the kill switch
// in one snapshot (b.Snapshot), so they describe one moment; the admin API
// and the web page's stats both read them here.
func readStats(ctx context.Context, b db.Bounded) (s db.Stats, lp *db.PurgeRecord, ks db.KillSwitch, err error) {
	err = b.Snapshot(ctx, func(q db.DBTX) error {
		var err error
		if s, err = db.GetStats(ctx, q); err != nil {
			return err
		}
		if lp, err = db.LastPurge(ctx, q); err != nil {
			return err
		}
		ks, err = db.GetKillSwitch(ctx, q)
		return err
	})
	return s, lp, ks, err
}

// stats summarises recent traffic and the dedup table for a dashboard or an
// on-call glance.
func (a *Admin) stats(c echo.Context) error {
	if err := checkQuery(c); err != nil {
		return err
	}
	s, lp, ks, err := readStats(c.Request().Context(), a.db())
	if err != nil {
		return err
	}
	out := statsResponse{
		LastHour:          outcomeWindow{Events: s.LastHour.Events, DuplicateRatio: s.LastHour.DuplicateRatio},
		LastDay:           outcomeWindow{Events: s.LastDay.Events, DuplicateRatio: s.LastDay.DuplicateRatio},
		LiveTraces:        s.LiveTraces,
		KillSwitchEngaged: ks.Engaged,
		At:                s.Now.UTC(),
	}
	if s.OldestTrace != nil {
		// Both times come from the database clock, so a skewed replica
		// clock does not distort the age.
		age := s.Now.Sub(*s.OldestTrace).Seconds()
		out.OldestTraceAgeSeconds = &age
		out.OldestTraceReceivedAt = utc(s.OldestTrace)
	}
	if lp != nil {
		out.LastPurge = &lastPurge{Traces: lp.Traces, Events: lp.Events}
		if !lp.At.IsZero() {
			out.LastPurge.At = utc(&lp.At)
		}
	}
	return adminJSON(c, http.StatusOK, out)
}

// purgeResponse is what one purge removed.
type purgeResponse struct {
	Traces int64 `json:"traces"`
	Events int64 `json:"events"`
	// PausedSeconds is how long it yielded to the signals between batches
	// (db.PurgeResult); 0 for a purge recorded before hoox reported it.
	PausedSeconds float64 `json:"paused_seconds"`
}

// purgeJobResponse is POST /admin/purge and GET /admin/purge/{job_id}: the
// River job that runs the purge, and what it removed once it completed.
type purgeJobResponse struct {
	JobID int64 `json:"job_id"`
	// State is River's: available, running, completed, discarded, ….
	State string `json:"state"`
	// AlreadyQueued is true when the POST found a purge already pending or
	// running and answers with that one instead of queueing another.
	AlreadyQueued bool       `json:"already_queued"`
	CreatedAt     time.Time  `json:"created_at"`
	FinalizedAt   *time.Time `json:"finalized_at"`
	// Result is what the purge removed, once completed.
	Result *purgeResponse `json:"result"`
	// Errors are the failed attempt's errors (the purge runs once; the next
	// periodic run is its retry).
	Errors []string `json:"errors,omitempty"`
	// StatusURL is where to follow the job.
	StatusURL string `json:"status_url"`
}

func purgeJob(job *rivertype.JobRow) purgeJobResponse {
	out := purgeJobResponse{JobID: job.ID, State: string(job.State), CreatedAt: job.CreatedAt.UTC(), FinalizedAt: utc(job.FinalizedAt),
		StatusURL: "/admin/purge/" + strconv.FormatInt(job.ID, 10)}
	if o := job.Output(); o != nil {
		var r purgeResponse
		if json.Unmarshal(o, &r) == nil {
			out.Result = &r
		}
	}
	for _, e := range job.Errors {
		out.Errors = append(out.Errors, e.Error)
	}
	return out
}

// purgeRequest is POST /admin/purge's optional body: an empty object. The
// purge's settings are the server's (HOOX_PURGE_BATCH,
// HOOX_AUDIT_RETENTION), never the request's.
type purgeRequest struct{}

// purge queues a purge (the periodic job's River job and code) and answers
// at once with its job ID: a purge of a large backlog takes longer than any
// HTTP request may be held. The job runs on a replica that works River's
// purge queue, one at a time; GET /admin/purge/{job_id} follows it.
//
// It takes no options: the body must be empty or {}, so a request such as
// {"dry_run": true} is refused rather than answered with a real purge.
func (a *Admin) purge(c echo.Context) error {
	if err := checkQuery(c); err != nil {
		return err
	}
	if err := decodeAdminBody(c, &purgeRequest{}, false); err != nil {
		return err
	}
	if a.River == nil {
		return problem(codes.Unavailable, "purge is not configured on this server")
	}
	res, err := a.River.Insert(c.Request().Context(), jobs.PurgeArgs{RequestedBy: "admin"}, nil)
	if err != nil {
		return fmt.Errorf("queue purge: %w", err)
	}
	out := purgeJob(res.Job)
	out.AlreadyQueued = res.UniqueSkippedAsDuplicate
	c.Response().Header().Set(echo.HeaderLocation, out.StatusURL)
	return adminJSON(c, http.StatusAccepted, out)
}

// purgeStatus is GET /admin/purge/{job_id}.
func (a *Admin) purgeStatus(c echo.Context) error {
	if a.River == nil {
		return problem(codes.Unavailable, "purge is not configured on this server")
	}
	id, err := strconv.ParseInt(c.Param("job_id"), 10, 64)
	if err != nil || id <= 0 {
		return problem(codes.InvalidRequest, "job_id must be a positive integer")
	}
	if err := checkQuery(c); err != nil {
		return err
	}
	job, err := a.River.JobGet(c.Request().Context(), id)
	if errors.Is(err, river.ErrNotFound) || (err == nil && job.Kind != (jobs.PurgeArgs{}).Kind()) {
		return problem(codes.NotFound, fmt.Sprintf("no purge job %d", id))
	}
	if err != nil {
		return fmt.Errorf("read purge job: %w", err)
	}
	return adminJSON(c, http.StatusOK, purgeJob(job))
}
