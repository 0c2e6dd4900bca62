package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// The sweeper (every HOOX_SWEEP_INTERVAL) and every /metrics scrape find
// the reconciling traces through their own partial index, never by
// scanning every trace: at a day of signals that scan read the whole table
// each time, and inside a purge it held up the signals' reads and commits
// (migration 00030). With the statistics autovacuum takes, and with those
// statistics gone stale under a restore of many more traces. (A table
// never analysed at all would read as one whose traces may all be
// reconciling; migration 00030 analyses a trace_ids that has rows, and
// autovacuum analyses it once it has some.)
func TestReconcilingTracesAreReadThroughTheirIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	received := time.Now().Add(-time.Hour)
	// Traces from to to, one in 5,000 of them reconciling.
	seed := func(from, to int) {
		t.Helper()
		testfactory.Traces(t, pool, "k:t-", from, to, testfactory.TraceOpts{ReceivedAt: received})
		for g := from; g <= to; g++ {
			if g%5000 == 0 {
				testfactory.Trace(t, pool, testfactory.TraceOpts{ID: fmt.Sprintf("k:r-%d", g), Status: db.TraceReconciling,
					ReceivedAt: received})
			}
		}
	}
	seed(1, 5000)
	_, err := pool.Exec(ctx, "ANALYZE trace_ids")
	require.NoError(t, err)
	for _, stale := range []bool{false, true} {
		if stale {
			seed(5001, 100000)
		}
		for name, plan := range map[string][]string{
			"sweeper": explain(t, pool, db.OrphanReconcilingSQL, int64(60000), 100, int64(3600000)),
			"scrape":  explain(t, pool, db.StateSQL, db.SettingKillSwitch),
		} {
			require.Contains(t, fmt.Sprint(plan), "trace_ids_reconciling_idx", "%s, stale %v, plan:\n%s", name, stale, plan)
			require.NotContains(t, fmt.Sprint(plan), "Seq Scan on trace_ids", "%s, stale %v, plan:\n%s", name, stale, plan)
		}
	}
	s, err := db.ReadState(ctx, pool)
	require.NoError(t, err)
	require.EqualValues(t, 20, s.ReconcilingTraces)
	require.InDelta(t, time.Hour.Seconds(), s.OldestReconcilingSeconds, 60)
}

// reconciling_since follows the status whoever writes it (no writer sets
// it), and a settlement that does not enter or leave reconciling stays an
// in-place (HOT) update, writing no index entry: the column exists so that
// finding the reconciling traces costs a signal nothing.
func TestReconcilingSinceFollowsTheStatusAndKeepsSettlementsHOT(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	hot := func() int64 {
		t.Helper()
		var n int64
		require.NoError(t, tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('trace_ids'::regclass)`).Scan(&n))
		return n
	}
	since := func(trace string) *time.Time {
		t.Helper()
		var at *time.Time
		require.NoError(t, tx.QueryRow(ctx, `SELECT reconciling_since FROM trace_ids WHERE trace_id = $1`, trace).Scan(&at))
		return at
	}
	set := func(trace, status string) time.Time {
		t.Helper()
		var updated time.Time
		require.NoError(t, tx.QueryRow(ctx, `
UPDATE trace_ids SET status = $2, updated_at = clock_timestamp() WHERE trace_id = $1 RETURNING updated_at`, trace, status).Scan(&updated))
		return updated
	}
	for _, tr := range []string{"k:a", "k:b"} {
		testfactory.Trace(t, tx, testfactory.TraceOpts{ID: tr, Status: db.TraceClaimed})
	}
	require.Nil(t, since("k:a"))

	set("k:a", "dispatched")
	require.EqualValues(t, 1, hot(), "claimed → dispatched is an in-place update")
	require.Nil(t, since("k:a"))

	entered := set("k:b", "reconciling")
	require.EqualValues(t, 1, hot(), "entering reconciling writes the index")
	require.NotNil(t, since("k:b"))
	require.True(t, since("k:b").Equal(entered), "reconciling since its last update")

	set("k:b", "dispatched")
	require.Nil(t, since("k:b"), "a settled trace leaves the index")

	_, err = tx.Exec(ctx, `UPDATE trace_ids SET reconciling_since = now() WHERE trace_id = 'k:a'`)
	require.Error(t, err, "no writer can set it")
}
