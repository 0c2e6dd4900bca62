package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/timing"
	"github.com/hoox/hoox/jobs"
)

// The test secrets are as long as hoox's configuration requires
// (api.MinSecretLen), though api.New itself does not validate.
const (
	adminToken    = "t0ken-for-tests-7c1e"
	webhookSecret = "s3cret-for-tests-9d2b"
)

// adminBundle is one test's server on its own database.
type adminBundle struct {
	pool    *pgxpool.Pool
	handler http.Handler
}

// setupAdmin builds the whole HTTP server: the admin API over a fresh
// database, the webhook with a paper venue (so a release can be followed by
// a real re-execution) and River's UI.
func setupAdmin(t *testing.T) *adminBundle {
	t.Helper()
	return setupAdminWorking(t, nil)
}

// setupAdminWorking is setupAdmin with a River client that works the purge
// queue with purge (built on the test's pool) and is started; nil purge
// gives an insert-only client, as setupAdmin.
func setupAdminWorking(t *testing.T, purge func(pool *pgxpool.Pool) river.Worker[jobs.PurgeArgs]) *adminBundle {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dsn)
	venue := paper.New(paper.Config{Pool: pgtest.OpenPool(t, dsn)})
	reg := prometheus.NewRegistry()
	gw := gateway.New(gateway.Config{DedupWindow: time.Minute, Timing: timing.Config{TraceTTL: 24 * time.Hour, LockWait: 2 * time.Second, VenueTimeout: 5 * time.Second}},
		gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, dsn), Venues: exchange.NewRegistry(map[string]exchange.Venue{"paper": venue}),
			Metrics: gateway.NewMetrics(reg)})
	t.Cleanup(gw.Close) // before the pools close
	cfg := &river.Config{}
	if purge != nil {
		workers := river.NewWorkers()
		river.AddWorker(workers, purge(pool))
		cfg = &river.Config{Workers: workers, Queues: map[string]river.QueueConfig{jobs.QueuePurge: {MaxWorkers: 1}},
			FetchCooldown: 10 * time.Millisecond, FetchPollInterval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	}
	rc, err := river.NewClient(riverpgxv5.New(pool), cfg)
	require.NoError(t, err)
	if purge != nil {
		require.NoError(t, rc.Start(context.Background()))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = rc.Stop(ctx)
		})
	}
	admin := &api.Admin{Pool: pool, River: rc}
	// The names an operator may set ledger entries for: paper, and a
	// "binance" account (a paper venue under that name) for the spot
	// ledger's tests.
	venues := exchange.NewRegistry(map[string]exchange.Venue{"paper": venue, "binance": venue})
	srv := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret},
		api.Deps{Gateway: gw, Pool: pool, Registry: reg, Admin: admin, Venues: venues})
	return &adminBundle{pool: pool, handler: srv.Handler()}
}

// response is what a request got back.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), string(r.Body))
	return m
}

// problem decodes a problem+json answer and checks its media type.
func (r response) problem(t *testing.T) map[string]any {
	t.Helper()
	require.Equal(t, "application/problem+json", r.Header.Get("Content-Type"), string(r.Body))
	return r.json(t)
}

func do(t *testing.T, h http.Handler, method, target, token, body string) response {
	t.Helper()
	return doFrom(t, h, "", method, target, token, body)
}

// doFrom is do from the peer address remote ("" keeps httptest's).
func doFrom(t *testing.T, h http.Handler, remote, method, target, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if remote != "" {
		req.RemoteAddr = remote
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	contract(t, h).ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func (b *adminBundle) do(t *testing.T, method, target, body string) response {
	t.Helper()
	return do(t, b.handler, method, target, adminToken, body)
}

func (b *adminBundle) insertTrace(t *testing.T, id string, status db.TraceStatus, exchange, symbol, mode string, receivedAt, expiresAt time.Time) {
	t.Helper()
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: id, Status: status, Exchange: exchange, Symbol: symbol, Mode: mode,
		ReceivedAt: receivedAt, ExpiresAt: expiresAt})
}

// insertOrder writes a limit order whose quantity and price need every
// digit numeric(38,18) has.
func (b *adminBundle) insertOrder(t *testing.T, traceID, symbol string, status exchange.Status, at time.Time) string {
	t.Helper()
	return testfactory.Order(t, b.pool, testfactory.OrderOpts{TraceID: traceID, Symbol: symbol, Status: status, CreatedAt: at,
		OrderType: "limit", Quantity: "0.000000000000000001", Price: "12345.678901234567890123"}).ID.String()
}

func TestAdminRoutesNeedTheToken(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.insertTrace(t, "k:held", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))

	routes := []struct {
		method, path, body string
		want               int
	}{
		{http.MethodGet, "/admin/traces", "", http.StatusOK},
		{http.MethodGet, "/admin/traces/k:held", "", http.StatusOK},
		{http.MethodDelete, "/admin/traces/k:held", "", http.StatusOK},
		{http.MethodGet, "/admin/orders", "", http.StatusOK},
		{http.MethodPost, "/admin/purge", "", http.StatusAccepted},
		{http.MethodGet, "/admin/stats", "", http.StatusOK},
		{http.MethodGet, "/admin/kill-switch", "", http.StatusOK},
		{http.MethodPut, "/admin/kill-switch", `{"engaged": false}`, http.StatusOK},
		{http.MethodGet, "/admin/ledger", "", http.StatusOK},
		{http.MethodPut, "/admin/ledger", `{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "0"}`, http.StatusOK},
		{http.MethodGet, "/admin/river/", "", http.StatusOK},
		{http.MethodGet, "/admin/river/api/jobs?state=available", "", http.StatusOK},
		{http.MethodGet, "/admin/no-such-route", "", http.StatusNotFound},
	}
	// Each route is guessed at from its own address: wrong tokens are
	// throttled per address (TestAdminWrongBearerTokensShareTheLoginThrottle).
	for i, r := range routes {
		name := r.method + " " + r.path
		remote := fmt.Sprintf("198.51.100.%d:1", i+1)
		for _, token := range []string{"", "wrong-token", adminToken + "x", strings.ToUpper(adminToken)} {
			res := doFrom(t, b.handler, remote, r.method, r.path, token, r.body)
			require.Equal(t, http.StatusUnauthorized, res.Status, "%s with token %q", name, token)
			require.Equal(t, "unauthorized", res.problem(t)["code"], name)
		}
		// A token in the query string is never accepted.
		sep := "?"
		if strings.Contains(r.path, "?") {
			sep = "&"
		}
		res := do(t, b.handler, r.method, r.path+sep+"token="+adminToken+"&access_token="+adminToken, "", r.body)
		require.Equal(t, http.StatusUnauthorized, res.Status, name)
	}
	// Basic auth or a bare token is not a bearer token either.
	req := httptest.NewRequest(http.MethodGet, "/admin/stats", nil)
	req.Header.Set("Authorization", adminToken)
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnauthorized, rec.Code)

	for _, r := range routes {
		res := b.do(t, r.method, r.path, r.body)
		require.Equal(t, r.want, res.Status, "%s: %s", r.method+" "+r.path, res.Body)
	}
}

func TestAdminDisabledWithoutAToken(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	srv := api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Pool: pool, Admin: &api.Admin{Pool: pool}})
	for _, token := range []string{"", "anything"} {
		for _, path := range []string{"/admin/traces", "/admin/stats", "/admin/kill-switch"} {
			res := do(t, srv.Handler(), http.MethodGet, path, token, "")
			require.Equal(t, http.StatusUnauthorized, res.Status)
			p := res.problem(t)
			require.Equal(t, "unauthorized", p["code"])
			require.Contains(t, p["detail"], "disabled")
		}
	}
}

// pageIDs walks a listing with next_cursor and returns the IDs it saw.
func pageIDs(t *testing.T, b *adminBundle, path, itemsKey, idKey string) []string {
	t.Helper()
	var ids []string
	target := path
	for pages := 0; ; pages++ {
		require.Less(t, pages, 50, "pagination does not end")
		res := b.do(t, http.MethodGet, target, "")
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		body := res.json(t)
		items := body[itemsKey].([]any)
		for _, it := range items {
			ids = append(ids, it.(map[string]any)[idKey].(string))
		}
		next, ok := body["next_cursor"].(string)
		if !ok {
			require.Nil(t, body["next_cursor"])
			return ids
		}
		require.NotEmpty(t, items, "a page with a next_cursor holds rows")
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		target = path + sep + "cursor=" + url.QueryEscape(next)
	}
}

func TestAdminTracesPagination(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("k:sig-%02d", i)
		// Every third pair shares a received_at: the trace ID breaks ties.
		at := base.Add(time.Duration(i-i%3) * time.Second)
		b.insertTrace(t, id, db.TraceDispatched, "paper", "BTCUSDT", "live", at, at.Add(24*time.Hour))
		want = append([]string{id}, want...)
	}
	require.Equal(t, want, pageIDs(t, b, "/admin/traces?limit=7", "traces", "trace_id"))
	require.Equal(t, want, pageIDs(t, b, "/admin/traces?limit=5", "traces", "trace_id"), "an exact multiple of the page size")
	require.Equal(t, want, pageIDs(t, b, "/admin/traces", "traces", "trace_id"), "the default page holds all 25")

	// A new trace arriving between pages does not shift the next page.
	first := b.do(t, http.MethodGet, "/admin/traces?limit=7", "").json(t)
	b.insertTrace(t, "k:late", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))
	second := b.do(t, http.MethodGet, "/admin/traces?limit=7&cursor="+url.QueryEscape(first["next_cursor"].(string)), "").json(t)
	require.Equal(t, want[7], second["traces"].([]any)[0].(map[string]any)["trace_id"])
}

func TestAdminTracesFilters(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	now := time.Now().UTC()
	b.insertTrace(t, "k:a", db.TraceDispatched, "paper", "BTCUSDT", "live", now.Add(-3*time.Hour), now.Add(time.Hour))
	b.insertTrace(t, "k:b", db.TraceRejected, "paper", "ETHUSDT", "live", now.Add(-2*time.Hour), now.Add(time.Hour))
	b.insertTrace(t, "test:k:c", db.TraceReconciling, "other", "BTCUSDT", "test", now.Add(-time.Hour), now.Add(time.Hour))

	ids := func(query string) []string { return pageIDs(t, b, "/admin/traces?"+query, "traces", "trace_id") }
	require.Equal(t, []string{"k:b"}, ids("status=rejected"))
	require.Equal(t, []string{"test:k:c"}, ids("status=reconciling"))
	require.Equal(t, []string{"test:k:c", "k:a"}, ids("symbol=btcusdt"), "symbols are matched upper-case")
	require.Equal(t, []string{"test:k:c"}, ids("exchange=OTHER"))
	require.Equal(t, []string{"test:k:c"}, ids("mode=test"))
	require.Equal(t, []string{"k:b", "k:a"}, ids("mode=live&exchange=paper"))
	since := now.Add(-150 * time.Minute).Format(time.RFC3339)
	require.Equal(t, []string{"test:k:c", "k:b"}, ids("since="+url.QueryEscape(since)))
	require.Equal(t, []string{"k:a"}, ids("until="+url.QueryEscape(since)))
	require.Empty(t, ids("status=failed"))

	// A listed trace carries what an operator needs, times in UTC.
	body := b.do(t, http.MethodGet, "/admin/traces?status=rejected", "").json(t)
	tr := body["traces"].([]any)[0].(map[string]any)
	require.Equal(t, "ETHUSDT", tr["symbol"])
	require.Equal(t, "live", tr["mode"])
	require.True(t, strings.HasSuffix(tr["received_at"].(string), "Z"), tr["received_at"])

	for query, param := range map[string]string{
		"status=bogus":        "status",
		"status=filled":       "status",
		"mode=paper":          "mode",
		"since=yesterday":     "since",
		"until=2025-13-01":    "until",
		"limit=0":             "limit",
		"limit=1001":          "limit",
		"limit=ten":           "limit",
		"cursor=not-a-cursor": "cursor",
		"statuss=rejected":    "statuss",
		"status=a&status=b":   "status",
		"since=" + url.QueryEscape(now.Format(time.RFC3339)) + "&until=" + url.QueryEscape(now.Add(-time.Hour).Format(time.RFC3339)): "until",
	} {
		res := b.do(t, http.MethodGet, "/admin/traces?"+query, "")
		require.Equal(t, http.StatusBadRequest, res.Status, query)
		p := res.problem(t)
		require.Equal(t, "invalid_request", p["code"], query)
		require.Contains(t, p["detail"], `"`+param+`"`, query)
	}
	// An orders cursor is not a traces cursor.
	b.insertOrder(t, "k:a", "BTCUSDT", "filled", now)
	b.insertOrder(t, "k:b", "BTCUSDT", "filled", now.Add(time.Second))
	page := b.do(t, http.MethodGet, "/admin/orders?limit=1", "").json(t)
	res := b.do(t, http.MethodGet, "/admin/traces?cursor="+url.QueryEscape(page["next_cursor"].(string)), "")
	require.Equal(t, http.StatusBadRequest, res.Status)
}

func TestAdminOrders(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	base := time.Now().Add(-time.Hour)
	var want []string
	for i := range 11 {
		want = append([]string{b.insertOrder(t, fmt.Sprintf("k:o%d", i), "BTCUSDT", "filled", base.Add(time.Duration(i/2)*time.Second))}, want...)
	}
	rejected := b.insertOrder(t, "k:rej", "DOGEUSDT", "rejected", base.Add(-time.Minute))

	got := pageIDs(t, b, "/admin/orders?status=filled&limit=4", "orders", "id")
	require.ElementsMatch(t, want, got)
	require.Len(t, got, len(want), "every order exactly once")
	require.Equal(t, []string{rejected}, pageIDs(t, b, "/admin/orders?status=rejected", "orders", "id"))
	require.Equal(t, []string{rejected}, pageIDs(t, b, "/admin/orders?symbol=DOGEUSDT", "orders", "id"))

	body := b.do(t, http.MethodGet, "/admin/orders?status=rejected", "").json(t)
	o := body["orders"].([]any)[0].(map[string]any)
	require.Equal(t, "0.000000000000000001", o["quantity"], "decimals are exact strings")
	require.Equal(t, "12345.678901234567890123", o["price"])
	require.Equal(t, "k:rej", o["trace_id"])

	res := b.do(t, http.MethodGet, "/admin/orders?status=dispatched", "")
	require.Equal(t, http.StatusBadRequest, res.Status)
	require.Contains(t, res.problem(t)["detail"], `"status"`)
}

func TestAdminTraceDetailRoutesAnyTraceID(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	now := time.Now()
	for _, id := range []string{"k:abc", "test:k:abc", "k:a/b c", "k:50%off"} {
		b.insertTrace(t, id, db.TraceDispatched, "paper", "BTCUSDT", "live", now, now.Add(time.Hour))
	}
	b.insertOrder(t, "k:abc", "BTCUSDT", "filled", now)
	_, err := b.pool.Exec(context.Background(),
		`INSERT INTO trace_events (trace_id, event, at) VALUES ('k:abc', 'received', $1), ('k:abc', 'dispatched', $2), ('k:abc', 'duplicate', $3)`,
		now, now.Add(time.Millisecond), now.Add(time.Second))
	require.NoError(t, err)

	for path, want := range map[string]string{
		"/admin/traces/k:abc":                        "k:abc",
		"/admin/traces/k%3Aabc":                      "k:abc",
		"/admin/traces/test:k:abc":                   "test:k:abc",
		"/admin/traces/test%3Ak%3Aabc":               "test:k:abc",
		"/admin/traces/k:a%2Fb%20c":                  "k:a/b c",
		"/admin/traces/k:50%25off":                   "k:50%off",
		"/admin/traces/" + url.PathEscape("k:a/b c"): "k:a/b c",
	} {
		res := b.do(t, http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, res.Status, "%s: %s", path, res.Body)
		body := res.json(t)
		require.Equal(t, want, body["trace_id"], path)
		require.Equal(t, want, body["trace"].(map[string]any)["trace_id"], path)
	}

	body := b.do(t, http.MethodGet, "/admin/traces/k:abc", "").json(t)
	require.Len(t, body["orders"], 1)
	var events []string
	for _, e := range body["events"].([]any) {
		events = append(events, e.(map[string]any)["event"].(string))
	}
	require.Equal(t, []string{"received", "dispatched", "duplicate"}, events, "events in time order")

	res := b.do(t, http.MethodGet, "/admin/traces/k:nothing", "")
	require.Equal(t, http.StatusNotFound, res.Status)
	require.Equal(t, "not_found", res.problem(t)["code"])
}

func TestAdminReleaseLetsTheSignalExecuteAgain(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const sig = `{"secret":"s3cret-for-tests-9d2b","exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"release-me"}`
	send := func() response { return do(t, b.handler, http.MethodPost, "/webhook", "", sig) }

	first := send()
	require.Equal(t, http.StatusOK, first.Status, string(first.Body))
	firstOrder := first.json(t)["order"].(map[string]any)["client_order_id"]
	require.Equal(t, http.StatusConflict, send().Status, "a repeat is a duplicate")
	// The repeat's audit row commits just after its answer.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(context.Background(),
			"SELECT count(*) FROM trace_history WHERE trace_id = 'k:release-me' AND event = 'duplicate'").Scan(&n))
		return n == 1
	}, 10*time.Second, 10*time.Millisecond)

	res := b.do(t, http.MethodDelete, "/admin/traces/k:release-me", `{"reason":"strategy fix"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, "dispatched", res.json(t)["status"])

	// Released and not yet re-sent: the trace is gone, its history is not.
	detail := b.do(t, http.MethodGet, "/admin/traces/k:release-me", "").json(t)
	require.Nil(t, detail["trace"])
	require.Len(t, detail["orders"], 1)

	again := send()
	require.Equal(t, http.StatusOK, again.Status, string(again.Body))
	require.NotEqual(t, firstOrder, again.json(t)["order"].(map[string]any)["client_order_id"], "a new execution gets a new client order ID")

	detail = b.do(t, http.MethodGet, "/admin/traces/k:release-me", "").json(t)
	require.NotNil(t, detail["trace"])
	require.Len(t, detail["orders"], 2)
	var trail []string
	var release map[string]any
	for _, e := range detail["events"].([]any) {
		ev := e.(map[string]any)
		if ev["event"] == "dispatch_started" {
			continue
		}
		trail = append(trail, ev["event"].(string))
		if ev["event"] == "released" {
			release = ev["detail"].(map[string]any)
		}
	}
	require.Equal(t, []string{"received", "dispatched", "duplicate", "released", "received", "dispatched"}, trail)
	require.Equal(t, "admin", release["by"])
	require.Equal(t, "strategy fix", release["reason"])

	res = b.do(t, http.MethodDelete, "/admin/traces/k:never-sent", "")
	require.Equal(t, http.StatusNotFound, res.Status)
	require.Equal(t, "not_found", res.problem(t)["code"])

	res = b.do(t, http.MethodDelete, "/admin/traces/k:release-me", `{"reason": 5}`)
	require.Equal(t, http.StatusBadRequest, res.Status)
	require.Equal(t, "invalid_request", res.problem(t)["code"])
}

func TestAdminKillSwitch(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()

	body := b.do(t, http.MethodGet, "/admin/kill-switch", "").json(t)
	require.Equal(t, false, body["engaged"])
	require.Nil(t, body["at"])

	res := b.do(t, http.MethodPut, "/admin/kill-switch", `{"engaged": true, "reason": "venue incident"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	body = b.do(t, http.MethodGet, "/admin/kill-switch", "").json(t)
	require.Equal(t, true, body["engaged"])
	require.Equal(t, "venue incident", body["reason"])
	require.NotNil(t, body["at"])

	// The claim itself sees it: every replica does, with no cache.
	tx, claim, err := db.Claim(ctx, b.pool, db.ClaimParams{TraceID: "k:ks", LockKey: "k:ks", Fingerprint: "f", Mode: "live",
		KeySource: "client", Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Signal: []byte(`{}`),
		TTL: time.Hour, LockWait: time.Second})
	require.NoError(t, err)
	tx.Rollback(ctx)
	require.True(t, claim.KillSwitch)
	const sig = `{"secret":"s3cret-for-tests-9d2b","exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted"}`
	res = do(t, b.handler, http.MethodPost, "/webhook", "", sig)
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	require.Equal(t, "kill_switch", res.problem(t)["code"])

	for _, bad := range []string{``, `{}`, `{"engaged": "yes"}`, `{"engaged": true, "reson": "typo"}`, `not json`, `{"engaged": true} {}`,
		`{"engaged": true, "reason": "` + strings.Repeat("x", 300) + `"}`} {
		res := b.do(t, http.MethodPut, "/admin/kill-switch", bad)
		require.Equal(t, http.StatusBadRequest, res.Status, bad)
		require.Equal(t, "invalid_request", res.problem(t)["code"], bad)
	}
	require.Equal(t, true, b.do(t, http.MethodGet, "/admin/kill-switch", "").json(t)["engaged"], "a bad body changes nothing")

	res = b.do(t, http.MethodPut, "/admin/kill-switch", `{"engaged": false}`)
	require.Equal(t, http.StatusOK, res.Status)
	res = do(t, b.handler, http.MethodPost, "/webhook", "", sig)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))

	detail := b.do(t, http.MethodGet, "/admin/traces/"+db.KillSwitchTraceID, "").json(t)
	var events []string
	for _, e := range detail["events"].([]any) {
		events = append(events, e.(map[string]any)["event"].(string))
	}
	require.Equal(t, []string{"kill_switch_engaged", "kill_switch_released"}, events)
}

func TestAdminPurgeAndStats(t *testing.T) {
	t.Parallel()
	b := setupAdminWorking(t, func(pool *pgxpool.Pool) river.Worker[jobs.PurgeArgs] {
		return jobs.NewPurgeWorker(pool, db.PurgeParams{Batch: 2}, nil, nil)
	})
	now := time.Now()
	for i := range 3 {
		b.insertTrace(t, fmt.Sprintf("k:expired-%d", i), db.TraceDispatched, "paper", "BTCUSDT", "live", now.Add(-26*time.Hour), now.Add(-2*time.Hour))
	}
	b.insertTrace(t, "k:live", db.TraceDispatched, "paper", "BTCUSDT", "live", now.Add(-time.Hour), now.Add(23*time.Hour))
	b.insertOrder(t, "k:expired-0", "BTCUSDT", "filled", now.Add(-26*time.Hour))
	_, err := b.pool.Exec(context.Background(), `
INSERT INTO trace_events (trace_id, event, at) VALUES
    ('k:live', 'received', now() - interval '10 minutes'),
    ('k:live', 'dispatched', now() - interval '10 minutes'),
    ('k:live', 'duplicate', now() - interval '5 minutes'),
    ('k:live', 'duplicate', now() - interval '3 hours'),
    ('k:other', 'received', now() - interval '3 hours')`)
	require.NoError(t, err)

	stats := b.do(t, http.MethodGet, "/admin/stats", "").json(t)
	require.Nil(t, stats["last_purge"])
	require.EqualValues(t, 4, stats["live_traces"])
	require.Greater(t, stats["oldest_trace_age_seconds"].(float64), float64(25*3600))

	res := b.do(t, http.MethodPost, "/admin/purge", "")
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
	job := res.json(t)
	require.Positive(t, job["job_id"])
	require.Equal(t, job["status_url"], res.Header.Get("Location"))
	done := b.waitPurge(t, job["status_url"].(string))
	require.Equal(t, "completed", done["state"], done)
	require.EqualValues(t, 3, done["result"].(map[string]any)["traces"])

	stats = b.do(t, http.MethodGet, "/admin/stats", "").json(t)
	require.EqualValues(t, 1, stats["live_traces"])
	hour := stats["last_hour"].(map[string]any)
	day := stats["last_day"].(map[string]any)
	require.Equal(t, map[string]any{"received": 1.0, "dispatched": 1.0, "duplicate": 1.0, "purged": 3.0}, hour["events"])
	require.InDelta(t, 0.5, hour["duplicate_ratio"], 1e-9)
	require.EqualValues(t, 2, day["events"].(map[string]any)["duplicate"])
	require.InDelta(t, 0.5, day["duplicate_ratio"], 1e-9)
	lp := stats["last_purge"].(map[string]any)
	require.EqualValues(t, 3, lp["traces"])
	require.NotNil(t, lp["at"])
	require.Equal(t, false, stats["kill_switch_engaged"])

	// Orders outlive their purged trace.
	detail := b.do(t, http.MethodGet, "/admin/traces/k:expired-0", "").json(t)
	require.Nil(t, detail["trace"])
	require.Len(t, detail["orders"], 1)

	var actor string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT updated_by FROM settings WHERE key = $1", db.SettingLastPurge).Scan(&actor))
	require.Equal(t, "admin", actor, "the admin's purge is recorded as the admin's")

	// A server without a purge says so instead of pretending.
	srv := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret}, api.Deps{Pool: b.pool, Admin: &api.Admin{Pool: b.pool}})
	res = do(t, srv.Handler(), http.MethodPost, "/admin/purge", adminToken, "")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	require.Equal(t, "unavailable", res.problem(t)["code"])
}

func TestAdminRiverUI(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	res := b.do(t, http.MethodGet, "/admin/river/", "")
	require.Equal(t, http.StatusOK, res.Status)
	require.Contains(t, string(res.Body), "<html")
	require.Contains(t, string(res.Body), "/admin/river", "the UI's links carry the mount prefix")

	res = b.do(t, http.MethodGet, "/admin/river/api/jobs?state=available", "")
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.JSONEq(t, `{"data":[]}`, string(res.Body))

	res = b.do(t, http.MethodGet, "/admin/river", "")
	require.Equal(t, http.StatusMovedPermanently, res.Status)
	require.Equal(t, "/admin/river/", res.Header.Get("Location"))

	// Without a River client the UI is simply not mounted.
	pool := b.pool
	srv := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret}, api.Deps{Pool: pool, Admin: &api.Admin{Pool: pool}})
	res = do(t, srv.Handler(), http.MethodGet, "/admin/river/", adminToken, "")
	require.Equal(t, http.StatusNotFound, res.Status)
}

// A reconciling trace's order may exist at the venue: releasing its key
// would let a resend place a second one, so the release is refused.
func TestAdminReleaseRefusesAReconcilingTrace(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:unsure", Status: db.TraceReconciling})

	res := b.do(t, http.MethodDelete, "/admin/traces/k:unsure", `{"reason":"try again"}`)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Equal(t, "reconciling", res.problem(t)["code"])
	detail := b.do(t, http.MethodGet, "/admin/traces/k:unsure", "").json(t)
	require.Equal(t, "reconciling", detail["trace"].(map[string]any)["status"])
}

// A trace that ended failed with its order unknown is released only with
// ?force=true, once the operator has checked the venue; the release is
// audited as forced.
func TestAdminReleaseOfAnUnknownOrderNeedsForce(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:unknown", Status: db.TraceFailed, ClientOrderID: "hx-unknown"})
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:unknown",
		Order: exchange.Order{ClientOrderID: "hx-unknown", Symbol: "BTCUSDT"}, Outcome: db.IntentFailed})

	res := b.do(t, http.MethodDelete, "/admin/traces/k:unknown", "")
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Contains(t, res.problem(t)["detail"], "force=true")

	res = b.do(t, http.MethodDelete, "/admin/traces/k:unknown?force=true", `{"reason":"checked the venue: no order"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	var forced bool
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT (detail->>'forced')::boolean FROM trace_history WHERE trace_id = 'k:unknown' AND event = 'released'`).Scan(&forced))
	require.True(t, forced)
}

// A release waits for an attempt in flight only as long as the configured
// lock wait (HOOX_LOCK_WAIT), then answers 409 in_progress with
// Retry-After, well before a request deadline shorter than the old fixed
// five seconds.
func TestAdminReleaseWaitsTheConfiguredLockWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	h := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret, Timing: timing.Config{LockWait: 50 * time.Millisecond}},
		api.Deps{Pool: pool, Admin: &api.Admin{Pool: pool}}).Handler()
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: "k:busy"})
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(ctx)) }()
	_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", db.LockKeyOf("k:busy"))
	require.NoError(t, err)

	deadline, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(deadline, http.MethodDelete, "/admin/traces/k:busy", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	res := response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Equal(t, "in_progress", res.problem(t)["code"])
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	d, err := db.GetTrace(ctx, pool, "k:busy")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the trace is kept")
}

// waitPurge follows a purge job at statusURL until River finalizes it.
func (b *adminBundle) waitPurge(t *testing.T, statusURL string) map[string]any {
	t.Helper()
	var job map[string]any
	require.Eventually(t, func() bool {
		res := b.do(t, http.MethodGet, statusURL, "")
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		job = res.json(t)
		return job["finalized_at"] != nil
	}, 30*time.Second, 20*time.Millisecond)
	return job
}

// blockedPurge is a purge worker that holds its job until released, so a
// test can ask the admin API about a purge that is still running.
type blockedPurge struct {
	river.WorkerDefaults[jobs.PurgeArgs]
	started, release chan struct{}
}

func (w *blockedPurge) Work(ctx context.Context, _ *river.Job[jobs.PurgeArgs]) error {
	close(w.started)
	select {
	case <-w.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return river.RecordOutput(ctx, db.PurgeResult{Traces: 7})
}

// POST /admin/purge answers with a job ID while the purge still runs,
// instead of holding the request for the whole purge (a large backlog
// outlasts the server's write timeout); a second request while it runs
// gets the same job, and GET follows it to its result.
func TestAdminPurgeAnswersWithAJobWhileThePurgeRuns(t *testing.T) {
	t.Parallel()
	w := &blockedPurge{started: make(chan struct{}), release: make(chan struct{})}
	b := setupAdminWorking(t, func(*pgxpool.Pool) river.Worker[jobs.PurgeArgs] { return w })

	res := b.do(t, http.MethodPost, "/admin/purge", "")
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
	first := res.json(t)
	require.Equal(t, false, first["already_queued"])
	select {
	case <-w.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the purge job never started")
	}

	// The purge is running: the API still answers at once, with the job.
	status := b.do(t, http.MethodGet, first["status_url"].(string), "")
	require.Equal(t, http.StatusOK, status.Status, string(status.Body))
	require.Equal(t, "running", status.json(t)["state"])
	again := b.do(t, http.MethodPost, "/admin/purge", "")
	require.Equal(t, http.StatusAccepted, again.Status, string(again.Body))
	require.Equal(t, first["job_id"], again.json(t)["job_id"], "one purge at a time: the running one is the answer")
	require.Equal(t, true, again.json(t)["already_queued"])

	close(w.release)
	done := b.waitPurge(t, first["status_url"].(string))
	require.Equal(t, "completed", done["state"])
	require.EqualValues(t, 7, done["result"].(map[string]any)["traces"])

	// Only purge jobs are shown here.
	require.Equal(t, http.StatusNotFound, b.do(t, http.MethodGet, "/admin/purge/999999", "").Status)
	require.Equal(t, http.StatusBadRequest, b.do(t, http.MethodGet, "/admin/purge/x", "").Status)
}
