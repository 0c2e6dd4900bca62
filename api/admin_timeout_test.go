package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
)

// review-admin, noticed and left: admin queries had no statement timeout,
// so one stuck behind a lock (or slow on a huge table) held its database
// connection, and its backend, for as long as it ran — past the client's
// leaving. The admin routes' database work now runs under
// AdminStatementTimeout: Postgres cancels the statement, nothing is
// changed, and the operator gets 503 with Retry-After.
func TestAdminQueriesStopAtTheStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupAdmin(t)
	h := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret, AdminStatementTimeout: 300 * time.Millisecond},
		api.Deps{Pool: b.pool, Admin: &api.Admin{Pool: b.pool}}).Handler()

	// Another session holds what the admin queries need.
	holder, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			require.NoError(t, holder.Rollback(ctx))
		}
	}
	t.Cleanup(release)
	_, err = holder.Exec(ctx, `LOCK TABLE trace_ids IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, '{"engaged": false}')
		ON CONFLICT (key) DO UPDATE SET value = settings.value`, db.SettingKillSwitch)
	require.NoError(t, err)

	answer := func(method, target, body string) response {
		t.Helper()
		done := make(chan response, 1)
		go func() { done <- doUnchecked(h, method, target, adminToken, body) }()
		select {
		case r := <-done:
			return r
		case <-time.After(20 * time.Second):
			release() // let the stuck request end, so the test can
			<-done
			t.Fatalf("%s %s: no answer while a lock was held: the query waits for ever", method, target)
			return response{}
		}
	}
	for _, req := range []struct{ method, target, body string }{
		{http.MethodGet, "/admin/traces", ""},
		{http.MethodPut, "/admin/kill-switch", `{"engaged": true, "reason": "drill"}`},
	} {
		r := answer(req.method, req.target, req.body)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s %s: %s", req.method, req.target, r.Body)
		require.Equal(t, "unavailable", r.problem(t)["code"])
		require.Contains(t, r.problem(t)["detail"], "statement timeout")
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	}
	// Postgres stopped the statements: nobody waits on the holder's locks.
	var waiting int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
	require.Zero(t, waiting)

	release()
	r := doUnchecked(h, http.MethodGet, "/admin/kill-switch", adminToken, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, false, r.json(t)["engaged"], "the timed-out engage changed nothing")
	r = doUnchecked(h, http.MethodPut, "/admin/kill-switch", adminToken, `{"engaged": true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, http.StatusOK, doUnchecked(h, http.MethodGet, "/admin/traces", adminToken, "").Status)
}

// doUnchecked is do without the contract checker, safe off the test's
// goroutine.
func doUnchecked(h http.Handler, method, target, token, body string) response {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}
