package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// Whole processes whose Postgres stops and starts again: while it is down
// hoox answers, with 503, and /readyz says so; once it is back hoox
// recovers without a restart.

func TestReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	cluster := pgtest.NewCluster(t)
	b := apptest.Start(t, cluster.DatabaseURL)
	ready := func() int {
		resp, err := apptest.Client.Get(b.URL + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, ready())
	ctx := context.Background()
	require.NoError(t, cluster.Stop(ctx))
	require.Eventually(t, func() bool { return ready() == http.StatusServiceUnavailable }, 20*time.Second, 50*time.Millisecond)
	resp, err := apptest.Client.Get(b.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the process is alive while its database is down")
	require.NoError(t, cluster.Start(ctx))
	require.Eventually(t, func() bool { return ready() == http.StatusOK }, 20*time.Second, 50*time.Millisecond)
}

func TestPostgresOutageMidLoad(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("fault test with a real Postgres stop")
	}
	cluster := pgtest.NewCluster(t)
	b := apptest.Start(t, cluster.DatabaseURL, func(c *app.Config) { c.Timing.LockWait = 500 * time.Millisecond })
	const n = 1500
	bodies := apptest.UniqueSignals("outage", n)
	done := make(chan []int, 1)
	go func() { done <- apptest.SendAll(apptest.Target(b.URL, bodies), 8, nil) }()

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
	outage := apptest.SendAll(apptest.Target(b.URL, apptest.UniqueSignals("during", 50)), 4, nil)
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
		resp, err := apptest.Client.Get(b.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	again := apptest.SendAll(apptest.Target(b.URL, bodies), 8, nil)
	for i, st := range again {
		if st == http.StatusServiceUnavailable {
			// A 503 placed nothing (the exactly-once check below holds
			// it to that); on a busy machine the reconnected pools can
			// still be at capacity, and a sender resends, as TradingView
			// does.
			st = apptest.PostRetryingBusy(t, b.URL, bodies[i]).Status
		}
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, st, "resend of signal %d", i)
	}
	pool, err = pgxpool.New(ctx, cluster.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	require.Equal(t, 0, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id LIKE 'k:during-%'"))
	apptest.RequireExactlyOnce(t, pool, "outage", n, acked)
}
