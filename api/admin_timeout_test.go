package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
	b := setupAdmin(t)
	h := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret, AdminStatementTimeout: 300 * time.Millisecond},
		api.Deps{Pool: b.pool, Admin: &api.Admin{Pool: b.pool}}).Handler()

	// Another session holds what the admin queries need.
	held := holdTracesAndKillSwitch(t, b.pool)
	answer := func(method, target, body string) response {
		t.Helper()
		return held.answer(method+" "+target, func() response { return doUnchecked(h, method, target, adminToken, body) })
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
	require.Zero(t, lockWaiters(t, b.pool))

	held.release()
	r := doUnchecked(h, http.MethodGet, "/admin/kill-switch", adminToken, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, false, r.json(t)["engaged"], "the timed-out engage changed nothing")
	r = doUnchecked(h, http.MethodPut, "/admin/kill-switch", adminToken, `{"engaged": true}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, http.StatusOK, doUnchecked(h, http.MethodGet, "/admin/traces", adminToken, "").Status)
}

// heldLocks is another session holding trace_ids (ACCESS EXCLUSIVE) and
// the kill switch's row, as a stuck migration or a long admin change
// would.
type heldLocks struct {
	t        *testing.T
	tx       pgx.Tx
	released bool
}

// holdTracesAndKillSwitch takes the locks in a session of pool's,
// released by release or at the test's end.
func holdTracesAndKillSwitch(t *testing.T, pool *pgxpool.Pool) *heldLocks {
	t.Helper()
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	h := &heldLocks{t: t, tx: tx}
	t.Cleanup(h.release)
	_, err = tx.Exec(ctx, `LOCK TABLE trace_ids IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, '{"engaged": false}')
		ON CONFLICT (key) DO UPDATE SET value = settings.value`, db.SettingKillSwitch)
	require.NoError(t, err)
	return h
}

func (h *heldLocks) release() {
	if !h.released {
		h.released = true
		require.NoError(h.t, h.tx.Rollback(context.Background()))
	}
}

// answer runs do, a request that needs the held locks, and fails the test
// if it has no answer after 20 s (then the request waits for ever).
func (h *heldLocks) answer(what string, do func() response) response {
	h.t.Helper()
	done := make(chan response, 1)
	go func() { done <- do() }()
	select {
	case r := <-done:
		return r
	case <-time.After(20 * time.Second):
		h.release() // let the stuck request end, so the test can
		<-done
		h.t.Fatalf("%s: no answer while a lock was held: the query waits for ever", what)
		return response{}
	}
}

// lockWaiters counts the sessions of the test's database waiting on a lock.
func lockWaiters(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
	return n
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
