// Package apptest runs whole hoox processes for tests: an app.App on a
// fresh database (Setup, Start), signals posted to it (Post, Signal, Storm,
// SendAll) and the rows that prove exactly once (Count, Fills,
// RequireExactlyOnce). internal/app's tests use it in-process; cmd/hoox's
// process tests use the same requests and checks against `hoox serve`
// children.
package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api/openapi/openapitest"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
)

// Secret is the webhook secret every test hoox runs with.
const Secret = "wh-secret-7f3a9c1e"

// AdminToken is the admin token of a hoox started by Start.
const AdminToken = "admin-token-91b2"

// Client is the HTTP client of every request the helpers send; a test
// binary's TestMain closes its idle connections before the leak check.
var Client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// Bundle is one hoox on a database, with a pool for assertions.
type Bundle struct {
	App *app.App
	// URL is the server's base URL, e.g. http://127.0.0.1:41234.
	URL string
	// Pool is the test's own pool on the database (Setup only).
	Pool *pgxpool.Pool
	// Logs is everything the process logged, as JSON lines.
	Logs  *testutil.LogBuffer
	DBURL string
}

// Setup starts a hoox on a fresh database, stopped when the test ends;
// mutate adjusts its config first.
func Setup(t *testing.T, mutate ...func(*app.Config)) *Bundle {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	b := Start(t, dbURL, mutate...)
	b.Pool = pgtest.OpenPool(t, dbURL)
	return b
}

// Start starts a hoox on dbURL (already migrated), stopped when the test
// ends: another replica of the same database, or one behind a pooler.
func Start(t *testing.T, dbURL string, mutate ...func(*app.Config)) *Bundle {
	t.Helper()
	cfg := app.DefaultConfig()
	cfg.DatabaseURL = dbURL
	cfg.Addr = "127.0.0.1:0"
	cfg.API.WebhookSecret = Secret
	cfg.API.AdminToken = AdminToken
	cfg.DBMaxConns = 8
	cfg.NoMigrate = true // the harness migrated the database
	for _, m := range mutate {
		m(&cfg)
	}
	logger, logs := testutil.JSONLogs()
	a, err := app.New(context.Background(), cfg, logger)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close(context.Background()) })
	return &Bundle{App: a, URL: "http://" + a.Addr(), Logs: logs, DBURL: dbURL}
}

// Reply is an answer of hoox's, its JSON body decoded.
type Reply struct {
	Status int
	Header http.Header
	Body   map[string]any
	Raw    string
}

// Str is the string at path in the body ("order", "id"), or "".
func (r Reply) Str(path ...string) string {
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

// Post sends body to url's /webhook with headers (name, value pairs).
func Post(t testing.TB, url, body string, headers ...string) Reply {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/webhook", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// A running hoox's answers are held to the OpenAPI document too, as
	// the api package's are.
	openapitest.Check(t, req, []byte(body), resp.StatusCode, resp.Header, raw)
	r := Reply{Status: resp.StatusCode, Header: resp.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &r.Body)
	return r
}

// PostRetryingBusy posts like a sender that resends a 503 (TradingView
// does, after 5 s; here sooner, at most the answer's Retry-After and 200 ms):
// a hoox at capacity on a loaded machine answers 503 "nothing was placed"
// honestly, and the resend must then be answered like any other copy.
func PostRetryingBusy(t testing.TB, url, body string) Reply {
	t.Helper()
	for attempt := 1; ; attempt++ {
		r := Post(t, url, body)
		if r.Status != http.StatusServiceUnavailable || r.Str("code") != "unavailable" || attempt == 20 {
			return r
		}
		wait := 200 * time.Millisecond
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil && time.Duration(secs)*time.Second < wait {
			wait = time.Duration(secs) * time.Second
		}
		time.Sleep(wait)
	}
}

// Signal builds a paper signal's body; extra is raw JSON members appended
// to it. A symbol in extra replaces the default one.
func Signal(extra string) string {
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","action":"buy","quantity":"0.5"`, Secret)
	if !strings.Contains(extra, `"symbol"`) {
		body += `,"symbol":"BTCUSDT"`
	}
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// Count runs a query returning one integer.
func Count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// Text runs a query returning one string.
func Text(t testing.TB, pool *pgxpool.Pool, query string) string {
	t.Helper()
	var s string
	require.NoError(t, pool.QueryRow(context.Background(), query).Scan(&s))
	return s
}

// Fills counts the paper venue's own rows: what a real exchange would hold.
func Fills(t testing.TB, pool *pgxpool.Pool) int {
	t.Helper()
	return Count(t, pool, "SELECT count(*) FROM paper_orders")
}

// Storm sends n identical signals at once across the given servers and
// returns how often each answer came: the status, and the problem code
// after a space ("409 duplicate").
func Storm(t *testing.T, urls []string, body string, n int) map[string]int {
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
			r := PostRetryingBusy(t, urls[i%len(urls)], body)
			key := fmt.Sprint(r.Status)
			if c := r.Str("code"); c != "" {
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

// RequireOneWinner fails unless exactly one of a storm's n attempts placed
// the order and every other one was answered 409.
func RequireOneWinner(t *testing.T, results map[string]int, n int) {
	t.Helper()
	require.Equal(t, 1, results["200"], "exactly one attempt places the order: %v", results)
	require.Equal(t, n-1, results["409 duplicate"]+results["409 in_progress"], "every other attempt is a 409: %v", results)
}

// SendAll sends every body (a "url|body" string, see Target) with `workers`
// concurrent senders and returns each body's HTTP status (0 when the
// request failed: connection refused or reset). stop, when set, is checked
// before each send.
func SendAll(bodies []string, workers int, stop *atomic.Bool) []int {
	statuses := make([]int, len(bodies))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(bodies) || (stop != nil && stop.Load()) {
					return
				}
				statuses[i] = SendOnce(bodies[i])
			}
		}()
	}
	wg.Wait()
	return statuses
}

// SendOnce sends one "url|body" and returns the status, 0 when no answer
// came within 20 s (TradingView's patience, with margin).
func SendOnce(body string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := body[:strings.Index(body, "|")]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/webhook", strings.NewReader(body[len(url)+1:]))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := Client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// Target addresses every body to url, for SendAll.
func Target(url string, bodies []string) []string {
	out := make([]string, len(bodies))
	for i, b := range bodies {
		out[i] = url + "|" + b
	}
	return out
}

// UniqueSignals is n signals keyed prefix-0 … prefix-(n-1).
func UniqueSignals(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = Signal(fmt.Sprintf(`"trace_id":"%s-%d"`, prefix, i))
	}
	return out
}

// RequireExactlyOnce checks the promise across a whole run of
// UniqueSignals(prefix, n): every signal has exactly one order and one
// paper fill, and every signal acknowledged with a 2xx has its order row.
func RequireExactlyOnce(t *testing.T, pool *pgxpool.Pool, prefix string, n int, acked []int) {
	t.Helper()
	require.Equal(t, n, Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, Count(t, pool, "SELECT count(DISTINCT trace_id) FROM orders WHERE trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, Count(t, pool, "SELECT count(*) FROM paper_orders p JOIN orders o USING (client_order_id) WHERE o.trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, Fills(t, pool), "the venue holds exactly one fill per signal")
	for i, st := range acked {
		if st >= 200 && st < 300 {
			require.Equal(t, 1, Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = $1", fmt.Sprintf("k:%s-%d", prefix, i)),
				"signal %d was acknowledged with %d but has no order", i, st)
		}
	}
}
