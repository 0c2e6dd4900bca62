package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// A request to an admin route with a method the route does not take is
// told so (405 method_not_allowed with the methods it takes), not told
// the route does not exist, and changes nothing: an operator who POSTs
// the kill switch learns to PUT it.
func TestAdminWrongMethodIs405WithTheAllowedMethods(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.insertTrace(t, "k:held", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))
	for _, r := range []struct{ method, path, body, allow string }{
		{http.MethodPost, "/admin/traces", "", "GET"},
		{http.MethodPut, "/admin/stats", "", "GET"},
		{http.MethodPost, "/admin/kill-switch", `{"engaged": true}`, "GET, PUT"},
		{http.MethodDelete, "/admin/kill-switch", "", "GET, PUT"},
		{http.MethodPatch, "/admin/ledger", `{"quantity": "1"}`, "GET, PUT"},
		{http.MethodGet, "/admin/purge", "", "POST"},
		{http.MethodDelete, "/admin/purge/1", "", "GET"},
		{http.MethodPost, "/admin/traces/k:held", "", "DELETE, GET"},
		{http.MethodPost, "/admin/orders", "", "GET"},
	} {
		name := r.method + " " + r.path
		res := b.do(t, r.method, r.path, r.body)
		require.Equal(t, http.StatusMethodNotAllowed, res.Status, "%s: %s", name, res.Body)
		require.Equal(t, "method_not_allowed", res.problem(t)["code"], name)
		for _, m := range strings.Split(r.allow, ", ") {
			require.Contains(t, res.Header.Get("Allow"), m, name)
		}
		// The token is still required first.
		res = do(t, b.handler, r.method, r.path, "", r.body)
		require.Equal(t, http.StatusUnauthorized, res.Status, name)
	}
	require.Equal(t, false, b.do(t, http.MethodGet, "/admin/kill-switch", "").json(t)["engaged"], "a wrong method changes nothing")
	// An unknown admin route is still a 404 behind the token.
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodPost, "/admin/no-such-route", "").Status)
	require.Equal(t, http.StatusUnauthorized, do(t, b.handler, http.MethodPost, "/admin/no-such-route", "", "").Status)
}

// Query parameters an admin route does not read are refused, not
// ignored: "?force=yes" is not a forced release, "?dry_run=true" is not a
// dry run and "?reason=…" is not the release's recorded reason. Each is
// a 400 that changes nothing.
func TestAdminQueryParametersARouteDoesNotReadAreRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.insertTrace(t, "k:held", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))
	for _, r := range []struct{ method, target, body string }{
		{http.MethodDelete, "/admin/traces/k:held?force=yes", ""},
		{http.MethodDelete, "/admin/traces/k:held?force=1", ""},
		{http.MethodDelete, "/admin/traces/k:held?force=true&force=false", ""},
		{http.MethodDelete, "/admin/traces/k:held?reason=resend", ""},
		{http.MethodGet, "/admin/traces/k:held?limit=5", ""},
		{http.MethodPost, "/admin/purge?dry_run=true", ""},
		{http.MethodGet, "/admin/purge/1?wait=true", ""},
		{http.MethodPut, "/admin/kill-switch?engaged=false", `{"engaged": true}`},
		{http.MethodGet, "/admin/kill-switch?engaged=true", ""},
		{http.MethodGet, "/admin/stats?window=1h", ""},
		{http.MethodPut, "/admin/ledger?quantity=5", `{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`},
	} {
		res := b.do(t, r.method, r.target, r.body)
		require.Equal(t, http.StatusBadRequest, res.Status, "%s %s: %s", r.method, r.target, res.Body)
		p := res.problem(t)
		require.Equal(t, "invalid_request", p["code"], r.target)
		require.Contains(t, p["detail"], "query parameter", r.target)
	}
	// Nothing changed: the trace is held, no purge was queued, the switch
	// is released and the ledger is empty.
	require.Equal(t, "dispatched", b.do(t, http.MethodGet, "/admin/traces/k:held", "").json(t)["trace"].(map[string]any)["status"])
	var jobs, ledger int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job`).Scan(&jobs))
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM spot_ledger`).Scan(&ledger))
	require.Zero(t, jobs)
	require.Zero(t, ledger)
	require.Equal(t, false, b.do(t, http.MethodGet, "/admin/kill-switch", "").json(t)["engaged"])

	// The spellings the routes read still work.
	res := b.do(t, http.MethodDelete, "/admin/traces/k:held?force=false", "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
}

// The bearer scheme is matched regardless of case (RFC 9110 §11.1: an
// authentication scheme is case-insensitive), so a client that writes
// "bearer" is neither refused nor counted as guessing.
func TestAdminBearerSchemeIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		req := httptest.NewRequest(http.MethodGet, "/admin/stats", nil)
		req.Header.Set("Authorization", scheme+" "+adminToken)
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", scheme, rec.Body)
	}
}

// A time filter at the zero time is a filter, not "no filter": until
// 0001-01-01 must not list every trace.
func TestAdminUntilTheZeroTimeIsRefusedNotIgnored(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.insertTrace(t, "k:held", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))
	for _, q := range []string{"until=0001-01-01T00:00:00Z", "since=0001-01-01T00:00:00Z"} {
		for _, path := range []string{"/admin/traces?", "/admin/orders?"} {
			res := b.do(t, http.MethodGet, path+q, "")
			require.Equal(t, http.StatusBadRequest, res.Status, "%s%s: %s", path, q, res.Body)
			require.Equal(t, "invalid_request", res.problem(t)["code"])
		}
	}
}
