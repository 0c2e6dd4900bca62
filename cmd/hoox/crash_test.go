package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
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
		"HOOX_WEBHOOK_SECRET=" + apptest.Secret}, env...)
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

func TestKillNineMidLoadThenResendEverySignal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test with real processes")
	}
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	const n = 2000
	bodies := apptest.UniqueSignals("kill", n)
	first := startServe(t, dbURL)
	var stop atomic.Bool
	done := make(chan []int, 1)
	go func() { done <- apptest.SendAll(apptest.Target(first.url, bodies), 16, &stop) }()
	// Kill once a good share has been executed, while senders are mid-flight.
	require.Eventually(t, func() bool { return apptest.Count(t, pool, "SELECT count(*) FROM orders") >= 300 }, 60*time.Second, 5*time.Millisecond)
	require.NoError(t, first.cmd.Process.Kill())
	<-waitOr(first.exited)
	stop.Store(true)
	acked := <-done

	second := startServe(t, dbURL)
	again := apptest.SendAll(apptest.Target(second.url, bodies), 16, nil)
	for i, st := range again {
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, st, "resend of signal %d", i)
		if acked[i] == http.StatusOK {
			require.Equal(t, http.StatusConflict, st, "signal %d executed before the kill must be a duplicate", i)
		}
	}
	apptest.RequireExactlyOnce(t, pool, "kill", n, acked)
}

func TestCrashBetweenVenueAnswerAndCommitIsAdoptedOnRetry(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	body := apptest.Signal(`"trace_id":"crash-1"`)

	doomed := startServe(t, dbURL, "HOOX_DRILL_CRASH_AFTER_VENUE=true")
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+body), "the connection dies with the process")
	err := <-waitOr(doomed.exited)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "hoox was killed")
	require.Equal(t, 1, apptest.Fills(t, pool), "the venue holds the order")
	require.Equal(t, 0, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"), "the claim died uncommitted")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'dispatch_started'"))

	survivor := startServe(t, dbURL)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, 1, apptest.Fills(t, pool), "the retry adopted the order instead of placing another")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'dispatched' AND detail->>'adopted' = 'true'"))
	require.Equal(t, http.StatusConflict, apptest.Post(t, survivor.url, body).Status)
}

// Two hoox processes on one database: the purge runs without anyone asking,
// removes each expired trace once, keeps the rest, and every purge job was
// scheduled by one leader.
func TestTwoProcessesPurgeOnceUnderOneLeader(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("needs real processes")
	}
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
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
		return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id LIKE 'k:old-%'") == 0
	}, 60*time.Second, 50*time.Millisecond)
	// Let a few more intervals pass under both processes.
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM river_job WHERE kind = 'purge' AND state = 'completed'") >= 4
	}, 60*time.Second, 50*time.Millisecond)

	require.Equal(t, 5, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"), "unexpired traces stay")
	require.Equal(t, 40, apptest.Count(t, pool, "SELECT count(*) FROM orders"), "orders are never purged")
	require.Equal(t, 40, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'purged'"), "each trace purged once")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(DISTINCT args->>'scheduler') FROM river_job WHERE kind = 'purge'"),
		"only the leader schedules the purge")
}

// A cancel signal whose process is SIGKILLed between two venue cancels (the
// first order already cancelled at the venue, nothing recorded) is
// finished by the sender's resend on another process: every targeted
// order ends cancelled at the venue and is recorded cancelled once.
func TestCrashBetweenCancelsIsFinishedByTheResend(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	first := startServe(t, dbURL)
	for _, key := range []string{"rest-a", "rest-b"} {
		r := apptest.Post(t, first.url, apptest.Signal(`"trace_id":"`+key+`","price":"80"`))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	}
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGTERM))
	<-waitOr(first.exited)

	cancel := `{"secret":"` + apptest.Secret + `","exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"cancel-crash"}`
	doomed := startServe(t, dbURL, "HOOX_DRILL_CRASH_AFTER_VENUE=true")
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+cancel), "the connection dies with the process")
	err := <-waitOr(doomed.exited)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "hoox was killed")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM paper_orders WHERE status = 'cancelled'"), "killed after the first cancel")
	require.Equal(t, 0, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:cancel-crash'"), "the claim died uncommitted")

	survivor := startServe(t, dbURL)
	r := apptest.Post(t, survivor.url, cancel)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, 2, apptest.Count(t, pool, "SELECT count(*) FROM paper_orders WHERE status = 'cancelled'"))
	require.Equal(t, 2, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE status = 'cancelled'"), "both recorded cancelled")
	require.Equal(t, 2, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'"), "each once")
	require.Equal(t, http.StatusConflict, apptest.Post(t, survivor.url, cancel).Status)
}
