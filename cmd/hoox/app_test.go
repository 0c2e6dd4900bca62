package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/testcontainers"
)

const testSecret = "wh-secret-7f3a9c1e"

// syncBuffer collects log output from concurrent goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testBundle is one hoox on a fresh database, with a pool for assertions.
type testBundle struct {
	app   *app.App
	url   string
	pool  *pgxpool.Pool
	logs  *syncBuffer
	dbURL string
}

func setup(t *testing.T, mutate ...func(*Config)) *testBundle {
	t.Helper()
	dbURL := testcontainers.NewDatabase(t)
	b := startBundle(t, dbURL, mutate...)
	b.pool = newTestPool(t, dbURL)
	return b
}

// newTestPool opens a pool for the test's own assertions.
func newTestPool(t *testing.T, dbURL string) *pgxpool.Pool {
	t.Helper()
	return testcontainers.OpenPool(t, dbURL)
}

// startBundle starts a hoox on dbURL, stopped when the test ends.
func startBundle(t *testing.T, dbURL string, mutate ...func(*Config)) *testBundle {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.DatabaseURL = dbURL
	cfg.Addr = "127.0.0.1:0"
	cfg.API.WebhookSecret = testSecret
	cfg.API.AdminToken = "admin-token-91b2"
	cfg.DBMaxConns = 8
	cfg.NoMigrate = true // the harness migrated the database
	for _, m := range mutate {
		m(&cfg)
	}
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := app.New(context.Background(), cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close(context.Background()) })
	return &testBundle{app: a, url: "http://" + a.Addr(), logs: logs, dbURL: dbURL}
}

type reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r reply) str(path ...string) string {
	var v any = r.Body
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

func post(t testing.TB, url, body string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/webhook", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	r := reply{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// postRetryingBusy posts like a sender that resends a 503 (TradingView
// does, after 5 s; here sooner, at most the answer's Retry-After and 200 ms):
// a hoox at capacity on a loaded machine answers 503 "nothing was placed"
// honestly, and the resend must then be answered like any other copy.
func postRetryingBusy(t testing.TB, url, body string) reply {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r := post(t, url, body)
		if r.Status != http.StatusServiceUnavailable || r.str("code") != "unavailable" || attempt == 20 {
			return r
		}
		wait := 200 * time.Millisecond
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && time.Duration(secs)*time.Second < wait {
			wait = time.Duration(secs) * time.Second
		}
		time.Sleep(wait)
	}
}

// sig builds a signal body; extra is raw JSON members appended to it. A
// symbol in extra replaces the default one.
func sig(extra string) string {
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","action":"buy","quantity":"0.5"`, testSecret)
	if !strings.Contains(extra, `"symbol"`) {
		body += `,"symbol":"BTCUSDT"`
	}
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

func count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// fills counts the paper venue's own rows: what a real exchange would hold.
func fills(t testing.TB, pool *pgxpool.Pool) int {
	return count(t, pool, "SELECT count(*) FROM paper_orders")
}

func TestDuplicateAnswers409WithTheFirstOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		name    string
		body    string
		headers []string
		prefix  string
	}{
		{"client key in body", sig(`"trace_id":"alert-1"`), nil, "k:alert-1"},
		{"Idempotency-Key header", sig(`"symbol":"ETHUSDT"`), []string{"Idempotency-Key", "hdr-1"}, "k:hdr-1"},
		{"derived from timestamp", sig(`"symbol":"SOLUSDT","timestamp":"2026-11-29T10:00:00Z"`), nil, "d:"},
		{"sliding window", sig(`"symbol":"ADAUSDT"`), nil, "w:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := post(t, b.url, tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, first.Status, first.Raw)
			require.True(t, strings.HasPrefix(first.str("trace_id"), tc.prefix), first.Raw)
			require.Equal(t, "dispatched", first.str("status"))
			require.Equal(t, "filled", first.str("order", "status"))
			orderID := first.str("order", "id")
			require.NotEmpty(t, orderID)

			again := post(t, b.url, tc.body, tc.headers...)
			require.Equal(t, http.StatusConflict, again.Status, again.Raw)
			require.Equal(t, "application/problem+json", again.Header.Get("Content-Type"))
			require.Equal(t, "duplicate", again.str("code"))
			require.Equal(t, first.str("trace_id"), again.str("trace_id"))
			require.Equal(t, orderID, again.str("original", "order_id"))
			require.Equal(t, "dispatched", again.str("original", "status"))
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = $1", first.str("trace_id")))
		})
	}
	require.Equal(t, len(cases), fills(t, b.pool))
	// A repeat's audit row commits just after its answer.
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event = 'duplicate'") == len(cases)
	}, 10*time.Second, 10*time.Millisecond)
}

func TestKeyReuseIs422AndPlacesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := post(t, b.url, sig(`"trace_id":"reuse-1"`))
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	other := post(t, b.url, strings.Replace(sig(`"trace_id":"reuse-1"`), `"0.5"`, `"0.7"`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, other.Raw)
	require.Equal(t, "key_reused", other.str("code"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, fills(t, b.pool))
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event = 'key_reused'") == 1
	}, 10*time.Second, 10*time.Millisecond)
}

// storm sends n identical signals at once across the given servers and
// returns the status codes and problem codes it got.
func storm(t *testing.T, urls []string, body string, n int) map[string]int {
	t.Helper()
	var (
		mu      sync.Mutex
		results = map[string]int{}
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r := postRetryingBusy(t, urls[i%len(urls)], body)
			key := fmt.Sprint(r.Status)
			if c := r.str("code"); c != "" {
				key += " " + c
			}
			mu.Lock()
			results[key]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	return results
}

func requireOneWinner(t *testing.T, results map[string]int, n int) {
	t.Helper()
	require.Equal(t, 1, results["200"], "exactly one attempt places the order: %v", results)
	require.Equal(t, n-1, results["409 duplicate"]+results["409 in_progress"], "every other attempt is a 409: %v", results)
}

func TestConcurrentIdenticalSignalsPlaceOneOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 500
	results := storm(t, []string{b.url}, sig(`"trace_id":"storm-1"`), n)
	requireOneWinner(t, results, n)
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, fills(t, b.pool))
}

func TestStormAcrossThreeServersPlacesOneOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := startBundle(t, b.dbURL)
	d := startBundle(t, b.dbURL)
	const n = 300
	results := storm(t, []string{b.url, c.url, d.url}, sig(`"trace_id":"storm-3"`), n)
	requireOneWinner(t, results, n)
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, fills(t, b.pool))
}

func TestRestartedServerRemembersClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := post(t, b.url, sig(`"trace_id":"before-restart"`))
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	b.app.Close(context.Background())

	c := startBundle(t, b.dbURL)
	again := post(t, c.url, sig(`"trace_id":"before-restart"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, first.str("order", "id"), again.str("original", "order_id"))
	require.Equal(t, 1, fills(t, b.pool))
}

func TestUnreachableVenueRollsBackSoTheRetryExecutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.app.Paper().SetFaults(paper.Faults{Unreachable: true})
	down := post(t, b.url, sig(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusServiceUnavailable, down.Status, down.Raw)
	require.Equal(t, "unavailable", down.str("code"))
	require.NotEmpty(t, down.Header.Get("Retry-After"))
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM trace_ids"))

	b.app.Paper().SetFaults(paper.Faults{})
	retry := post(t, b.url, sig(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusOK, retry.Status, retry.Raw)
	again := post(t, b.url, sig(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, 1, fills(t, b.pool))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
}

func TestLiveAndTestSignalsWithTheSameKeyDoNotCollide(t *testing.T) {
	t.Parallel()
	b := setup(t)
	live := post(t, b.url, sig(`"trace_id":"same-key"`))
	require.Equal(t, http.StatusOK, live.Status, live.Raw)
	paperTest := post(t, b.url, sig(`"trace_id":"same-key","test":true`))
	require.Equal(t, http.StatusOK, paperTest.Status, paperTest.Raw)
	require.Equal(t, "k:same-key", live.str("trace_id"))
	require.Equal(t, "test:k:same-key", paperTest.str("trace_id"))
	require.NotEqual(t, live.str("order", "client_order_id"), paperTest.str("order", "client_order_id"))
	require.Equal(t, 2, fills(t, b.pool))
}

func TestRejectedOrderIs422AndKeepsTheTrace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := post(t, b.url, sig(`"trace_id":"bad-symbol","symbol":"INVALIDXYZ"`))
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
	require.Equal(t, "order_rejected", r.str("code"))
	require.Equal(t, "rejected", r.str("order", "status"))
	require.Equal(t, "rejected", count2str(t, b.pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:bad-symbol'"))
	again := post(t, b.url, sig(`"trace_id":"bad-symbol","symbol":"INVALIDXYZ"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "rejected", again.str("original", "status"))
	require.Equal(t, 0, fills(t, b.pool))
}

func count2str(t testing.TB, pool *pgxpool.Pool, query string) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), query).Scan(&s))
	return s
}

func TestSecretNeverReachesRowsOrLogs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, http.StatusOK, post(t, b.url, sig(`"trace_id":"s-1"`)).Status)
	require.Equal(t, http.StatusConflict, post(t, b.url, sig(`"trace_id":"s-1"`)).Status)
	require.Equal(t, http.StatusUnprocessableEntity, post(t, b.url, sig(`"trace_id":"s-2","symbol":"INVALID1"`)).Status)
	wrong := post(t, b.url, strings.Replace(sig(`"trace_id":"s-3"`), testSecret, testSecret+"x", 1))
	require.Equal(t, http.StatusUnauthorized, wrong.Status, wrong.Raw)
	aliased := strings.Replace(sig(`"trace_id":"s-4"`), `"secret"`, `"apiKey"`, 1)
	require.Equal(t, http.StatusOK, post(t, b.url, aliased).Status)
	// Admin traffic: right token, wrong token, a token in the query string.
	const token = "admin-token-91b2"
	for _, h := range []string{"Bearer " + token, "Bearer " + token + "x", ""} {
		req, err := http.NewRequest(http.MethodGet, b.url+"/admin/traces/k:s-1?token="+token, nil)
		require.NoError(t, err)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	req, err := http.NewRequest(http.MethodPut, b.url+"/admin/kill-switch", strings.NewReader(`{"engaged":false,"reason":"drill"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Every text column of every hoox table, dumped as JSON.
	var dump string
	require.NoError(t, b.pool.QueryRow(context.Background(), `
		SELECT concat_ws(' ',
			(SELECT json_agg(t) FROM trace_ids t), (SELECT json_agg(o) FROM orders o),
			(SELECT json_agg(e) FROM trace_events e), (SELECT json_agg(s) FROM settings s),
			(SELECT json_agg(p) FROM paper_orders p), (SELECT json_agg(j) FROM river_job j))`).Scan(&dump))
	require.Contains(t, dump, "s-1", "the dump holds the traces")
	require.Contains(t, dump, "drill", "the dump holds the admin's audit")
	require.NotContains(t, dump, testSecret)
	require.NotContains(t, dump, token)
	logs := b.logs.String()
	require.Contains(t, logs, "/webhook", "requests were logged")
	require.Contains(t, logs, "/admin/traces", "admin requests were logged")
	require.NotContains(t, logs, testSecret)
	require.NotContains(t, logs, token)
}

func TestQuantitiesAndPricesAreExact(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"ETHUSDT","action":"buy","trace_id":"exact-1",`+
		`"quantity":12345678901234567890.123456789012345678,"price":"0.000000000000000001","order_type":"market"}`, testSecret)
	r := post(t, b.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "12345678901234567890.123456789012345678", r.str("order", "quantity"))
	require.Equal(t, "0.000000000000000001", r.str("order", "price"))
	require.Equal(t, "12345678901234567890.123456789012345678", count2str(t, b.pool, "SELECT quantity::text FROM orders"))
	require.Equal(t, "0.000000000000000001", count2str(t, b.pool, "SELECT trim_scale(price)::text FROM orders"))
	require.Equal(t, "12345678901234567890.123456789012345678", count2str(t, b.pool, "SELECT quantity::text FROM paper_orders"))
	require.Equal(t, "0.000000000000000001", count2str(t, b.pool, "SELECT trim_scale(fill_price)::text FROM paper_orders"))
}

// A trace blocks repeats for HOOX_TRACE_TTL; once the purge has removed it,
// the same signal executes again, and the audit trail shows both executions.
func TestExpiredTraceIsPurgedAndTheSignalExecutesAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) {
		// The shortest TTL hoox accepts: the dedup window fits inside it,
		// twice the signal age inside the window, and the age counts whole
		// seconds.
		c.Gateway.TraceTTL, c.Gateway.DedupWindow, c.Jobs.MaxSignalAge = 2*time.Second, 2*time.Second, time.Second
		c.Jobs.PurgeInterval = time.Second
	})
	body := sig(`"trace_id":"ttl-1"`)
	first := post(t, b.url, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)

	// The periodic purge (River's leader, in this process) removes it
	// without anyone asking.
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:ttl-1'") == 0
	}, 30*time.Second, 20*time.Millisecond)

	again := post(t, b.url, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	require.NotEqual(t, first.str("order", "client_order_id"), again.str("order", "client_order_id"),
		"a second execution gets its own client order ID")
	require.Equal(t, 2, fills(t, b.pool))

	rows, err := b.pool.Query(context.Background(),
		"SELECT event FROM trace_events WHERE trace_id = 'k:ttl-1' AND event <> 'dispatch_started' ORDER BY at, id")
	require.NoError(t, err)
	events, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"received", "dispatched", "purged", "received", "dispatched"}, events)
}

// Without a key or a timestamp, the same signal inside HOOX_DEDUP_WINDOW is
// a duplicate; once the first is older than the window, it executes again.
func TestSlidingWindowExpires(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := sig(`"symbol":"XRPUSDT"`)
	first := post(t, b.url, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	require.Equal(t, http.StatusConflict, post(t, b.url, body).Status)

	// Age the first claim past the 60 s window instead of waiting a minute.
	_, err := b.pool.Exec(context.Background(),
		"UPDATE trace_ids SET received_at = received_at - interval '61 seconds' WHERE trace_id = $1", first.str("trace_id"))
	require.NoError(t, err)
	again := post(t, b.url, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	require.NotEqual(t, first.str("trace_id"), again.str("trace_id"))
	require.True(t, strings.HasPrefix(again.str("trace_id"), "w:"))
	require.Equal(t, 2, fills(t, b.pool))
}
