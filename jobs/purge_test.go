package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/jobs"
)

func TestPeriodicPurge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seedTrace(t, b.pool, "k:expired", db.TraceDispatched, -time.Minute)
	seedOrder(t, b.pool, "k:expired", "hxexpired")
	seedTrace(t, b.pool, "k:live", db.TraceDispatched, time.Hour)
	seedOrder(t, b.pool, "k:live", "hxlive")
	// Expired while its order's fate is unknown: kept for the reconcile.
	seedTrace(t, b.pool, "k:reconciling", db.TraceReconciling, -time.Minute)

	startClient(t, b, jobs.Config{PurgeInterval: time.Second})

	require.Eventually(t, func() bool { return !traceExists(t, b.pool, "k:expired") }, time.Minute, 50*time.Millisecond,
		"the purge job never removed the expired trace")
	require.True(t, traceExists(t, b.pool, "k:live"), "an unexpired trace was purged")
	require.True(t, traceExists(t, b.pool, "k:reconciling"), "a reconciling trace was purged")
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM orders`), "the purge must never delete orders")
	es := events(t, b.pool, "k:expired")
	require.Equal(t, []string{"purged"}, eventNames(es))
	require.Equal(t, "dispatched", es[0].Detail["status"])

	// A trace that expires while the client runs goes on a later run,
	// without anyone asking.
	seedTrace(t, b.pool, "k:soon", db.TraceDispatched, 500*time.Millisecond)
	require.Eventually(t, func() bool { return !traceExists(t, b.pool, "k:soon") }, time.Minute, 50*time.Millisecond)
	require.True(t, traceExists(t, b.pool, "k:live"))

	var raw []byte
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT value FROM settings WHERE key = $1`, db.SettingLastPurge).Scan(&raw))
	var last struct {
		At     string `json:"at"`
		Traces int64  `json:"traces"`
	}
	require.NoError(t, json.Unmarshal(raw, &last))
	_, err := time.Parse(time.RFC3339, last.At)
	require.NoError(t, err, "last_purge.at %q is not RFC 3339", last.At)
}

func TestPurgeOnlyLeaderSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 50 {
		seedTrace(t, b.pool, fmt.Sprintf("k:expired-%d", i), db.TraceDispatched, -time.Minute)
	}
	seedTrace(t, b.pool, "k:live", db.TraceDispatched, time.Hour)

	// Two replicas on one database.
	startClient(t, b, jobs.Config{PurgeInterval: time.Second, ClientID: "replica_a"})
	startClient(t, b, jobs.Config{PurgeInterval: time.Second, ClientID: "replica_b"})

	// Several purges have run when the traces seeded late are gone too.
	require.Eventually(t, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'purge' AND state = 'completed'`) >= 3
	}, time.Minute, 50*time.Millisecond)
	seedTrace(t, b.pool, "k:late", db.TraceDispatched, 200*time.Millisecond)
	require.Eventually(t, func() bool { return !traceExists(t, b.pool, "k:late") }, time.Minute, 50*time.Millisecond)

	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "only the unexpired trace stays")
	require.EqualValues(t, 51, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'purged'`),
		"every expired trace is purged exactly once")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'purge' AND state IN ('discarded', 'retryable')`))

	// Only the elected leader schedules: every purge job names it.
	rows, err := b.pool.Query(context.Background(), `SELECT DISTINCT args->>'scheduler' FROM river_job WHERE kind = 'purge'`)
	require.NoError(t, err)
	var schedulers []string
	for rows.Next() {
		var s string
		require.NoError(t, rows.Scan(&s))
		schedulers = append(schedulers, s)
	}
	require.NoError(t, rows.Err())
	var leader string
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT leader_id FROM river_leader`).Scan(&leader))
	require.Equal(t, []string{leader}, schedulers, "purge jobs scheduled by a replica that is not the leader")
}

func TestPurgeBatches(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.pool.Exec(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, expires_at)
SELECT 'k:old-' || i, 'fp', 'live', 'client', 'dispatched', 'paper', 'BTCUSDT', 'buy', '{}', now() - interval '1 second' * i
FROM generate_series(1, 12000) AS i`)
	require.NoError(t, err)
	seedOrder(t, b.pool, "k:old-1", "hxold1")
	for i := range 3 {
		seedTrace(t, b.pool, fmt.Sprintf("k:live-%d", i), db.TraceDispatched, time.Hour)
	}

	// Paced like the periodic job: the pauses between batches change how
	// long it takes, never what it removes.
	res, err := db.Purge(ctx, b.pool, db.PurgeParams{Batch: 5000, Duty: db.DefaultPurgeDuty})
	require.NoError(t, err)
	require.EqualValues(t, 12000, res.Traces)
	require.Zero(t, res.Events)
	require.Positive(t, res.PausedSeconds, "two full batches, each followed by a pause, reported")
	require.EqualValues(t, 3, count(t, b.pool, `SELECT count(*) FROM trace_ids`))
	require.EqualValues(t, 12000, count(t, b.pool, `SELECT count(DISTINCT trace_id) FROM trace_history WHERE event = 'purged' AND trace_id LIKE 'k:old-%'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders`))

	var last map[string]any
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'last_purge'`).Scan(&last))
	require.EqualValues(t, 12000, last["traces"])
	require.EqualValues(t, 0, last["events"])

	// Nothing left: a second run reports nothing and records that.
	res, err = db.Purge(ctx, b.pool, db.PurgeParams{Batch: 5000})
	require.NoError(t, err)
	require.Equal(t, db.PurgeResult{}, res)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT value FROM settings WHERE key = 'last_purge'`).Scan(&last))
	require.EqualValues(t, 0, last["traces"])
}

func TestPurgeAuditRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seed := func(t *testing.T, b *testBundle) {
		_, err := b.pool.Exec(ctx, `
INSERT INTO trace_events (trace_id, event, at)
SELECT 'k:t' || (i % 7), 'received', now() - interval '100 days' - interval '1 minute' * i FROM generate_series(1, 2500) AS i
UNION ALL
SELECT 'k:t' || (i % 7), 'received', now() - interval '1 day' * i FROM generate_series(1, 30) AS i;
-- purged events (trace_history's other table): 1,200 past the retention, 20 within
INSERT INTO trace_purges (trace_id, at, status, received_at, expires_at)
SELECT 'k:p' || i, now() - interval '91 days' - interval '1 minute' * i, 'dispatched', now() - interval '200 days', now() - interval '199 days'
FROM generate_series(1, 1200) AS i
UNION ALL
SELECT 'k:p' || i, now() - interval '2 days' * i, 'dispatched', now() - interval '100 days', now() - interval '99 days'
FROM generate_series(1, 20) AS i`)
		require.NoError(t, err)
	}

	t.Run("OldGoneRecentStay", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		seed(t, b)
		res, err := db.Purge(ctx, b.pool, db.PurgeParams{Batch: 1000, AuditRetention: 90 * 24 * time.Hour})
		require.NoError(t, err)
		require.Equal(t, db.PurgeResult{Traces: 0, Events: 2500 + 1200}, res)
		require.EqualValues(t, 30+20, count(t, b.pool, `SELECT count(*) FROM trace_history`))
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE at < now() - interval '90 days'`))
	})

	t.Run("ZeroKeepsAll", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		seed(t, b)
		res, err := db.Purge(ctx, b.pool, db.PurgeParams{Batch: 1000})
		require.NoError(t, err)
		require.Equal(t, db.PurgeResult{}, res)
		require.EqualValues(t, 2530+1220, count(t, b.pool, `SELECT count(*) FROM trace_history`))
	})
}

// TestPurgeSkipsLockedRows: a row another transaction holds is passed over,
// not waited for, and purged by a later run.
func TestPurgeSkipsLockedRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	seedTrace(t, b.pool, "k:held", db.TraceDispatched, -time.Minute)
	seedTrace(t, b.pool, "k:free", db.TraceDispatched, -time.Minute)

	// Another transaction (an admin release, a reconcile) holds one row.
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM trace_ids WHERE trace_id = 'k:held' FOR UPDATE`)
	require.NoError(t, err)

	res, err := db.Purge(ctx, b.pool, db.PurgeParams{Batch: 10})
	require.NoError(t, err, "the purge must not wait on a locked row")
	require.Equal(t, db.PurgeResult{Traces: 1}, res)
	require.True(t, traceExists(t, b.pool, "k:held"))

	require.NoError(t, tx.Rollback(ctx))
	res, err = db.Purge(ctx, b.pool, db.PurgeParams{Batch: 10})
	require.NoError(t, err)
	require.Equal(t, db.PurgeResult{Traces: 1}, res)
}
