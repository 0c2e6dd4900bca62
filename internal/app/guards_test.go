package app_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// The webhook's guards (signature, IP allow-list, rate limit, content
// types, hostile bodies) are tested in package api against a fake gateway;
// what needs whole processes stays here.

func TestKillSwitchHaltsEveryReplica(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	other := apptest.Start(t, b.DBURL)
	setKillSwitch := func(engaged bool) {
		body := fmt.Sprintf(`{"engaged":%t,"reason":"drill"}`, engaged)
		req, err := http.NewRequest(http.MethodPut, b.URL+"/admin/kill-switch", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer admin-token-91b2")
		req.Header.Set("Content-Type", "application/json")
		resp, err := apptest.Client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	setKillSwitch(true)                              // through one replica …
	for _, url := range []string{other.URL, b.URL} { // … halts every replica
		r := apptest.Post(t, url, apptest.Signal(`"trace_id":"halted"`))
		require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
		require.Equal(t, "kill_switch", r.Str("code"))
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	}
	require.Equal(t, 0, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids"))
	require.Equal(t, 0, apptest.Fills(t, b.Pool))

	setKillSwitch(false)
	require.Equal(t, http.StatusOK, apptest.Post(t, other.URL, apptest.Signal(`"trace_id":"halted"`)).Status)
	require.Equal(t, 2, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE event LIKE 'kill_switch_%'"), "both changes are audited")
}

func TestMetricsExposeRuntimeRequestsAndOutcomes(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	require.Equal(t, http.StatusOK, apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"m-1"`)).Status)
	require.Equal(t, http.StatusConflict, apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"m-1"`)).Status)
	resp, err := apptest.Client.Get(b.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := string(raw)
	for _, want := range []string{
		"go_goroutines ",
		`hoox_http_request_duration_seconds_count{method="POST",route="/webhook",status="200"} 1`,
		`hoox_http_request_duration_seconds_count{method="POST",route="/webhook",status="409"} 1`,
		`hoox_signals_total{outcome="dispatched"} 1`,
		`hoox_signals_total{outcome="duplicate"} 1`,
		"hoox_claim_seconds_count 2",
		"hoox_dispatch_seconds_count 1",
		`hoox_purged_rows_total{table="trace_ids"} 0`,
		`hoox_river_job_failures_total{kind="reconcile"} 0`,
		`hoox_reconciles_total{outcome="stale"} 0`,
	} {
		require.Contains(t, body, want)
	}
}
