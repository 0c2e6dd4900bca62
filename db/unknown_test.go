package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// seedEnded writes an expired trace that ended with status, its client
// order ID's intent settled with outcome ("" writes no intent).
func seedEnded(t *testing.T, pool db.DBTX, id string, status db.TraceStatus, outcome db.IntentOutcome) {
	t.Helper()
	cid := "hx-" + id
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: id, Status: status, ClientOrderID: cid,
		ReceivedAt: time.Now().Add(-48 * time.Hour), ExpiresAt: time.Now().Add(-time.Hour)})
	if outcome != "" {
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: id, Order: exchange.Order{ClientOrderID: cid, Symbol: "BTCUSDT"},
			SentAt: time.Now().Add(-48 * time.Hour), Outcome: outcome})
	}
}

// B3: a trace whose order may exist at the venue (the reconcile or the
// sweeper gave up: "whether order X exists is unknown") outlives its TTL;
// a trace whose outcome is known is purged as before.
func TestPurgeKeepsTracesWhoseOrderIsUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	seedEnded(t, pool, "k:unknown", db.TraceFailed, db.IntentFailed)
	seedEnded(t, pool, "k:no-intent", db.TraceFailed, "")
	seedEnded(t, pool, "k:reconciling", db.TraceReconciling, db.IntentReconciling)
	seedEnded(t, pool, "k:stale", db.TraceFailed, db.IntentNotPlaced)
	seedEnded(t, pool, "k:other", db.TraceFailed, db.IntentKeyReused)
	seedEnded(t, pool, "k:done", db.TraceDispatched, db.IntentDispatched)
	s, err := db.ReadState(ctx, pool)
	require.NoError(t, err)
	require.InDelta(t, time.Hour.Seconds(), s.PurgeOverdueSeconds, 60, "the purgeable traces expired an hour ago")

	res, err := db.Purge(ctx, pool, db.PurgeParams{})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Traces)
	require.ElementsMatch(t, []string{"k:unknown", "k:no-intent", "k:reconciling"}, traceIDs(t, pool))
	// What the purge keeps on purpose is not overdue: an alert on the
	// gauge (hoox_purge_overdue_seconds) would fire for it until the
	// sweeper settles it.
	s, err = db.ReadState(ctx, pool)
	require.NoError(t, err)
	require.Zero(t, s.PurgeOverdueSeconds)
}

// B3: an operator cannot release such a trace by accident; forcing it is
// audited.
func TestReleaseRefusesATraceWhoseOrderIsUnknownUnlessForced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	seedEnded(t, pool, "k:unknown", db.TraceFailed, db.IntentFailed)
	seedEnded(t, pool, "k:stale", db.TraceFailed, db.IntentNotPlaced)

	_, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:unknown", By: "admin", LockWait: time.Second})
	require.ErrorIs(t, err, db.ErrOrderUnknown)
	_, err = db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:stale", By: "admin", LockWait: time.Second})
	require.NoError(t, err, "a trace whose order is known absent is released as before")
	require.Equal(t, []string{"k:unknown"}, traceIDs(t, pool))

	status, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:unknown", By: "admin", Force: true, LockWait: time.Second})
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, status)
	require.Empty(t, traceIDs(t, pool))
	var forced bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT (detail->>'forced')::boolean FROM trace_history
		WHERE trace_id = 'k:unknown' AND event = 'released'`).Scan(&forced))
	require.True(t, forced, "the forced release is audited as such")
}

func traceIDs(t *testing.T, pool db.DBTX) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT trace_id FROM trace_ids ORDER BY trace_id`)
	require.NoError(t, err)
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		ids = append(ids, id)
	}
	require.NoError(t, rows.Err())
	return ids
}

// B10: every installation has its own client order ID namespace, created by
// a migration.
func TestDeploymentIsCreatedByTheMigrations(t *testing.T) {
	t.Parallel()
	d, err := db.Deployment(context.Background(), pgtest.NewPool(t))
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{32}$`, d)
}

// Expired traces scattered over the table (expiry unrelated to where the
// rows lie, as after a restore) are purged by sweeping the pages, with the
// same guarantees as the index pass: every expired trace with a known
// outcome goes, with its purged event; live traces and traces whose order
// is unknown stay.
func TestPurgeSweepsScatteredTraces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	// 3,000 traces in scattered expiry order, a third of them live, one
	// in fifty failed with no intent (its order unknown).
	scatteredTraces(t, pool, 3000, 3001, 50, `'{}'`)
	var expired, unknown, live int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE expires_at < now() AND status = 'dispatched'),
       count(*) FILTER (WHERE expires_at < now() AND status = 'failed'), count(*) FILTER (WHERE expires_at > now()) FROM trace_ids`).
		Scan(&expired, &unknown, &live))
	require.Positive(t, unknown)

	// A batch of 10 finds its 10 rows on 10 different pages: scattered.
	res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: 10})
	require.NoError(t, err)
	require.EqualValues(t, expired, res.Traces)
	require.EqualValues(t, unknown+live, countRows(t, pool, `SELECT count(*) FROM trace_ids`))
	require.EqualValues(t, unknown, countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE expires_at < now()`), "only the unknown ones stay expired")
	require.EqualValues(t, expired, countRows(t, pool, `SELECT count(DISTINCT trace_id) FROM trace_history WHERE event = 'purged'`))
	require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE event = 'purged' AND detail->>'status' = 'failed'`))
}

// No purge transaction deletes from many more pages than db.MaxDirtyPages,
// however scattered the expired traces lie: after a checkpoint each page
// it touches is a full page image in the WAL, which the signals
// committing after it wait to flush. A first batch of 5,000 rows in expiry
// order dirtied a page per row, 40 MB of WAL in one commit (issue 21,
// eleventh round).
func TestPurgeTransactionsEachDeleteFromAFewPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	// 30,000 traces of a realistic size (so they fill pages as a day's
	// do) in scattered expiry order, two thirds expired.
	scatteredTraces(t, pool, 30000, 30011, 0, `jsonb_build_object('comment', repeat('x', 200))`)
	_, err := pool.Exec(ctx, `CREATE TABLE page_before AS SELECT trace_id, (ctid::text::point)[0] AS page FROM trace_ids`)
	require.NoError(t, err)
	pages := countRows(t, pool, `SELECT count(DISTINCT page) FROM page_before`)
	require.Greater(t, pages, 3*db.MaxDirtyPages, "the expired traces lie on many more pages than one transaction may touch")

	transactions, most := purgeTwentyThousand(t, pool)
	require.LessOrEqual(t, most, int64(2*db.MaxDirtyPages), "pages one purge transaction deleted from (%d transactions)", transactions)
}

// purgeTwentyThousand purges the 20,000 expired traces the caller seeded,
// recorded the page of every trace in page_before, and says how many
// transactions did it and the most pages one of them deleted from.
func purgeTwentyThousand(t *testing.T, pool *pgxpool.Pool) (transactions, most int64) {
	t.Helper()
	ctx := context.Background()
	res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: db.DefaultPurgeBatch})
	require.NoError(t, err)
	require.EqualValues(t, 20000, res.Traces)
	require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE expires_at < now()`))
	// Each purged event is written by the transaction that deleted its
	// trace: group them by it.
	require.NoError(t, pool.QueryRow(ctx, `
SELECT count(*), max(pages) FROM (
    SELECT count(DISTINCT b.page) AS pages FROM trace_purges p JOIN page_before b USING (trace_id) GROUP BY p.xmin::text) x`).
		Scan(&transactions, &most))
	return transactions, most
}

// The sweep's page ranges never grow past what one transaction may dirty:
// ranges that held no expired trace (a stretch of live ones, as the
// table's first pages hold after a restore behind a running gateway's
// traces) had doubled the range each time, and the first range to reach
// the expired traces deleted from 2,865 pages in one statement, 23 MB of
// full page images in one commit (the signals' p99 119 ms in the purge
// bench; issue 21, twentieth round).
func TestPurgeSweepPastLivePagesDeletesFromAFewPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	// About 8 * MaxDirtyPages pages of live traces first, then expired
	// ones in scattered expiry order.
	_, err := pool.Exec(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id, signal, expires_at)
SELECT 'live:' || g, 'fp', 'live', 'derived', 'dispatched', 'paper', 'BTCUSDT', 'buy', 'hl' || g,
       jsonb_build_object('comment', repeat('x', 200)), now() + interval '1 hour'
FROM generate_series(1, 8 * $1::int * 20) g`, db.MaxDirtyPages)
	require.NoError(t, err)
	scatteredTraces(t, pool, 30000, 30011, 0, `jsonb_build_object('comment', repeat('x', 200))`)
	_, err = pool.Exec(ctx, `CREATE TABLE page_before AS SELECT trace_id, (ctid::text::point)[0] AS page FROM trace_ids`)
	require.NoError(t, err)
	require.Greater(t, countRows(t, pool, `SELECT min(page) FROM page_before WHERE trace_id LIKE 'd:%'`), 4*db.MaxDirtyPages,
		"the expired traces lie behind a long stretch of live ones")

	transactions, most := purgeTwentyThousand(t, pool)
	require.LessOrEqual(t, most, int64(db.MaxDirtyPages), "pages one purge transaction deleted from (%d transactions)", transactions)
}

// A row the sweep cannot lock (a reconcile or an admin release holds it)
// is passed over, not waited for, and the next purge removes it: the
// sweep is the purge's last pass (issue 21, twentieth round).
func TestPurgeSweepPassesOverAHeldRowForTheNextPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	scatteredTraces(t, pool, 3000, 3001, 0, `'{}'`)
	var held string
	require.NoError(t, pool.QueryRow(ctx, `SELECT trace_id FROM trace_ids WHERE expires_at < now() ORDER BY ctid DESC LIMIT 1`).Scan(&held))
	expired := countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE expires_at < now()`)

	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `SELECT 1 FROM trace_ids WHERE trace_id = $1 FOR UPDATE`, held)
	require.NoError(t, err)

	res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: 10})
	require.NoError(t, err, "the purge must not wait on a held row")
	require.EqualValues(t, expired-1, res.Traces)
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE trace_id = $1`, held))

	require.NoError(t, tx.Rollback(ctx))
	res, err = db.Purge(ctx, pool, db.PurgeParams{Batch: 10})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Traces)
	require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE expires_at < now()`))
}

// scatteredTraces inserts n derived traces whose expiry order is unrelated
// to the order they lie in (g * 7919 mod prime permutes 1..n; prime > n),
// as after a restore: a third of them live for another hour or more, the
// rest expired an hour or more ago; one in failedEvery (0: none) failed
// with no intent, its order unknown. signal is the SQL of their signal.
func scatteredTraces(t *testing.T, pool *pgxpool.Pool, n, prime, failedEvery int, signal string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id, signal, expires_at)
SELECT 'd:' || g, 'fp', 'live', 'derived', CASE WHEN $3 > 0 AND g % $3 = 0 THEN 'failed' ELSE 'dispatched' END,
       'paper', 'BTCUSDT', 'buy', 'hx' || g, `+signal+`,
       now() + CASE WHEN g % 3 = 0 THEN 1 ELSE -1 END * (interval '1 hour' + interval '1 second' * ((g * 7919) % $2))
FROM generate_series(1, $1::int) g`, n, prime, failedEvery)
	require.NoError(t, err)
}
