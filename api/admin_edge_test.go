package api_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
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

// A release names the claim the operator looked at (its received_at). If
// the trace was released and claimed again since — another operator's
// release, then the sender's resend placing a new order — the stale
// release is refused (409 trace_changed) and the new claim stays held:
// freeing it would let the same signal place a third order. The claim
// named still releases.
func TestAdminReleaseOfAClaimSinceReplacedIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupAdmin(t)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "again").Status)
	seen := b.do(t, http.MethodGet, "/admin/traces/k:again", "").json(t)["trace"].(map[string]any)["received_at"].(string)

	// Meanwhile: released by someone else, and the resend executes again.
	require.Equal(t, http.StatusOK, b.do(t, http.MethodDelete, "/admin/traces/k:again", "").Status)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "again").Status)
	now := b.do(t, http.MethodGet, "/admin/traces/k:again", "").json(t)["trace"].(map[string]any)["received_at"].(string)
	require.NotEqual(t, seen, now)

	res := b.do(t, http.MethodDelete, "/admin/traces/k:again", `{"reason": "resend after fix", "received_at": "`+seen+`"}`)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	p := res.problem(t)
	require.Equal(t, "trace_changed", p["code"])
	require.Contains(t, p["detail"], now, "the answer names the claim that holds it now")
	d, err := db.GetTrace(ctx, b.pool, "k:again")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the new claim is still held")
	require.Equal(t, http.StatusConflict, sendSignal(t, b.handler, "again").Status, "a resend is a duplicate")

	res = b.do(t, http.MethodDelete, "/admin/traces/k:again", `{"received_at": "`+now+`"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
}

var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// The web page's release form names the claim it shows, so a release
// posted from a page shown before the trace was released and claimed
// again (an old tab, a second operator) releases nothing.
func TestUIReleaseFromAStalePageIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, br := loggedInWithATrace(t, "stale")
	page := string(br.get("/ui/trace/k:stale").Body)
	form := page[strings.Index(page, `action="/ui/release"`):]
	form = form[:strings.Index(form, "</form>")]
	fields := url.Values{"confirm": {"yes"}}
	for _, m := range hiddenRE.FindAllStringSubmatch(form, -1) {
		fields.Set(m[1], html.UnescapeString(m[2]))
	}

	// Meanwhile: released through the API, and the resend executes again.
	_, err := db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: "k:stale", By: "admin", LockWait: time.Second})
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "stale").Status)

	res := br.post("/ui/release", fields, nil)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Contains(t, string(res.Body), "claimed again")
	d, err := db.GetTrace(ctx, b.pool, "k:stale")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the new claim is still held")
}
