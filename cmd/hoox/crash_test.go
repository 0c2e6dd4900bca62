package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/testcontainers"
)

// serveProcess is a `hoox serve` child process.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	exited chan error
}

// startServe runs `hoox serve` on dbURL and waits until it listens.
func startServe(t *testing.T, dbURL string, env ...string) *serveProcess {
	t.Helper()
	cmd := exec.Command(binary(t), "serve", "--addr", "127.0.0.1:0", "--no-migrate")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "DATABASE_URL=" + dbURL,
		"HOOX_WEBHOOK_SECRET=" + testSecret}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	p := &serveProcess{cmd: cmd, exited: make(chan error, 1)}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "hoox listening" {
				listening <- line.Addr
			}
		}
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-waitOr(p.exited)
	})
	select {
	case addr := <-listening:
		p.url = "http://" + addr
	case err := <-p.exited:
		t.Fatalf("hoox serve exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("hoox serve did not start")
	}
	return p
}

// sendAll sends every body with `workers` concurrent senders and returns
// each body's HTTP status (0 when the request failed: connection refused or
// reset). stop, when set, is checked before each send.
func sendAll(bodies []string, workers int, stop *atomic.Bool) []int {
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
				statuses[i] = sendOnce(bodies[i])
			}
		}()
	}
	wg.Wait()
	return statuses
}

func sendOnce(body string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	url := body[:strings.Index(body, "|")]
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/webhook", strings.NewReader(body[len(url)+1:]))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func target(url string, bodies []string) []string {
	out := make([]string, len(bodies))
	for i, b := range bodies {
		out[i] = url + "|" + b
	}
	return out
}

func uniqueSignals(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = sig(fmt.Sprintf(`"trace_id":"%s-%d"`, prefix, i))
	}
	return out
}

// requireExactlyOnce checks the promise across the whole run: every signal
// has exactly one order and one paper fill, and every signal acknowledged
// with a 2xx has its order row.
func requireExactlyOnce(t *testing.T, pool *pgxpool.Pool, prefix string, n int, acked []int) {
	t.Helper()
	require.Equal(t, n, count(t, pool, "SELECT count(*) FROM orders WHERE trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, count(t, pool, "SELECT count(DISTINCT trace_id) FROM orders WHERE trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, count(t, pool, "SELECT count(*) FROM paper_orders p JOIN orders o USING (client_order_id) WHERE o.trace_id LIKE $1", "k:"+prefix+"-%"))
	require.Equal(t, n, fills(t, pool), "the venue holds exactly one fill per signal")
	for i, st := range acked {
		if st >= 200 && st < 300 {
			require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = $1", fmt.Sprintf("k:%s-%d", prefix, i)),
				"signal %d was acknowledged with %d but has no order", i, st)
		}
	}
}

func TestKillNineMidLoadThenResendEverySignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test with real processes")
	}
	dbURL := testcontainers.NewDatabase(t)
	pool := newTestPool(t, dbURL)

	const n = 2000
	bodies := uniqueSignals("kill", n)
	first := startServe(t, dbURL)
	var stop atomic.Bool
	done := make(chan []int, 1)
	go func() { done <- sendAll(target(first.url, bodies), 16, &stop) }()
	// Kill once a good share has been executed, while senders are mid-flight.
	require.Eventually(t, func() bool { return count(t, pool, "SELECT count(*) FROM orders") >= 300 }, 60*time.Second, 5*time.Millisecond)
	require.NoError(t, first.cmd.Process.Kill())
	<-waitOr(first.exited)
	stop.Store(true)
	acked := <-done

	second := startServe(t, dbURL)
	again := sendAll(target(second.url, bodies), 16, nil)
	for i, st := range again {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, st, "resend of signal %d", i)
		if acked[i] == http.StatusOK {
			require.Equal(t, http.StatusConflict, st, "signal %d executed before the kill must be a duplicate", i)
		}
	}
	requireExactlyOnce(t, pool, "kill", n, acked)
}

func TestPostgresOutageMidLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test with a real Postgres stop")
	}
	cluster := testcontainers.NewCluster(t)
	b := startBundle(t, cluster.DatabaseURL, func(c *Config) { c.Gateway.LockWait = 500 * time.Millisecond })
	const n = 1500
	bodies := uniqueSignals("outage", n)
	done := make(chan []int, 1)
	go func() { done <- sendAll(target(b.url, bodies), 8, nil) }()

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, cluster.DatabaseURL)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		var c int
		return pool.QueryRow(ctx, "SELECT count(*) FROM orders").Scan(&c) == nil && c >= 200
	}, 60*time.Second, 5*time.Millisecond)
	pool.Close()
	require.NoError(t, cluster.Stop(ctx))
	// While Postgres is down hoox still answers, and only with 503.
	outage := sendAll(target(b.url, uniqueSignals("during", 50)), 4, nil)
	for _, st := range outage {
		require.Equal(t, http.StatusServiceUnavailable, st)
	}
	require.NoError(t, cluster.Start(ctx))
	acked := <-done
	for i, st := range acked {
		require.Contains(t, []int{http.StatusOK, http.StatusServiceUnavailable, http.StatusConflict}, st, "signal %d", i)
	}

	// hoox recovers without a restart; resending everything executes what
	// was refused and answers 409 for the rest.
	require.Eventually(t, func() bool {
		resp, err := client.Get(b.url + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	again := sendAll(target(b.url, bodies), 8, nil)
	for i, st := range again {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, st, "resend of signal %d", i)
	}
	pool, err = pgxpool.New(ctx, cluster.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	require.Equal(t, 0, count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id LIKE 'k:during-%'"))
	requireExactlyOnce(t, pool, "outage", n, acked)
}

func TestCrashBetweenVenueAnswerAndCommitIsAdoptedOnRetry(t *testing.T) {
	t.Parallel()
	dbURL := testcontainers.NewDatabase(t)
	pool := newTestPool(t, dbURL)
	body := sig(`"trace_id":"crash-1"`)

	doomed := startServe(t, dbURL, "HOOX_DRILL_CRASH_AFTER_VENUE=true")
	require.Equal(t, 0, sendOnce(doomed.url+"|"+body), "the connection dies with the process")
	err := <-waitOr(doomed.exited)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "hoox was killed")
	require.Equal(t, 1, fills(t, pool), "the venue holds the order")
	require.Equal(t, 0, count(t, pool, "SELECT count(*) FROM trace_ids"), "the claim died uncommitted")
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM trace_events WHERE event = 'dispatch_started'"))

	survivor := startServe(t, dbURL)
	r := post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, 1, fills(t, pool), "the retry adopted the order instead of placing another")
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, count(t, pool, "SELECT count(*) FROM trace_events WHERE event = 'dispatched' AND detail->>'adopted' = 'true'"))
	require.Equal(t, http.StatusConflict, post(t, survivor.url, body).Status)
}

// Two hoox processes on one database: the purge runs without anyone asking,
// removes each expired trace once, keeps the rest, and every purge job was
// scheduled by one leader.
func TestTwoProcessesPurgeOnceUnderOneLeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs real processes")
	}
	dbURL := testcontainers.NewDatabase(t)
	pool := newTestPool(t, dbURL)
	ctx := context.Background()
	_, err := pool.Exec(ctx, `
		INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, received_at, expires_at)
		SELECT 'k:old-' || i, 'f', 'live', 'client', 'dispatched', 'paper', 'BTCUSDT', 'buy', '{}', now() - interval '2 days', now() - interval '1 day'
		FROM generate_series(1, 40) i;
		INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, received_at, expires_at)
		SELECT 'k:fresh-' || i, 'f', 'live', 'client', 'dispatched', 'paper', 'BTCUSDT', 'buy', '{}', now(), now() + interval '1 day'
		FROM generate_series(1, 5) i;
		INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, mode, status)
		SELECT gen_random_uuid(), 'k:old-' || i, 'hxold' || i, 'paper', 'BTCUSDT', 'buy', 'buy', 'market', 1, 'live', 'filled'
		FROM generate_series(1, 40) i`)
	require.NoError(t, err)

	startServe(t, dbURL, "HOOX_PURGE_INTERVAL=1s")
	startServe(t, dbURL, "HOOX_PURGE_INTERVAL=1s")
	require.Eventually(t, func() bool {
		return count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id LIKE 'k:old-%'") == 0
	}, 60*time.Second, 50*time.Millisecond)
	// Let a few more intervals pass under both processes.
	require.Eventually(t, func() bool {
		return count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'purge' AND state = 'completed'") >= 4
	}, 60*time.Second, 50*time.Millisecond)

	require.Equal(t, 5, count(t, pool, "SELECT count(*) FROM trace_ids"), "unexpired traces stay")
	require.Equal(t, 40, count(t, pool, "SELECT count(*) FROM orders"), "orders are never purged")
	require.Equal(t, 40, count(t, pool, "SELECT count(*) FROM trace_events WHERE event = 'purged'"), "each trace purged once")
	require.Equal(t, 1, count(t, pool, "SELECT count(DISTINCT args->>'scheduler') FROM river_job WHERE kind = 'purge'"),
		"only the leader schedules the purge")
}
