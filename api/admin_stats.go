package api

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
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

// stats summarises recent traffic and the dedup table for a dashboard or an
// on-call glance.
func (a *Admin) stats(c echo.Context) error {
	ctx := c.Request().Context()
	s, err := db.GetStats(ctx, a.Pool)
	if err != nil {
		return err
	}
	lp, err := db.LastPurge(ctx, a.Pool)
	if err != nil {
		return err
	}
	ks, err := db.GetKillSwitch(ctx, a.Pool)
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

// purgeResponse is POST /admin/purge: what this run removed.
type purgeResponse struct {
	Traces int64 `json:"traces"`
	Events int64 `json:"events"`
}

// purge runs the purge now, the same code as the periodic job.
func (a *Admin) purge(c echo.Context) error {
	if a.Purge == nil {
		return problem(codes.Unavailable, "purge is not configured on this server")
	}
	res, err := a.Purge(c.Request().Context())
	if err != nil {
		return err
	}
	return adminJSON(c, http.StatusOK, purgeResponse{Traces: res.Traces, Events: res.Events})
}
