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

// The purge's page sweep reads the pages it was given and nothing else,
// whatever the statistics say. The case that broke it: statistics taken
// while every trace was live (a running gateway's), then a day's expired
// traces added without ANALYZE (a restore, a backfill, or simply the
// autovacuum not having run yet). The planner then believed no row was
// expired and walked the expiry index through every expired trace, with a
// heap fetch each, to keep the few in the page range: 3–5 s a statement
// instead of tens of milliseconds (issue 21, ninth round). A trace an
// operator pinned with an infinite expiry is kept, and does not fail the
// sweep of its page.
func TestPurgeSweepReadsItsPagesWhateverTheStatisticsSay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	testfactory.Traces(t, pool, "k:live-", 1, 20000, testfactory.TraceOpts{})
	_, err := pool.Exec(ctx, "ANALYZE trace_ids")
	require.NoError(t, err)
	// A trace an operator pinned with an infinite expiry, then the expired
	// traces, which fill the pages after it.
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: "k:pinned"})
	_, err = pool.Exec(ctx, `UPDATE trace_ids SET expires_at = 'infinity' WHERE trace_id = 'k:pinned'`)
	require.NoError(t, err)
	testfactory.Traces(t, pool, "k:expired-", 1, 100000, testfactory.TraceOpts{ExpiresAt: time.Now().Add(-time.Hour)})

	// The sweep runs past the pinned trace and keeps it.
	var pinnedPage int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT (ctid::text::point)[0]::bigint FROM trace_ids WHERE trace_id = 'k:pinned'`).Scan(&pinnedPage))
	var swept, dirtied int64
	require.NoError(t, pool.QueryRow(ctx, db.PurgeTracePagesSQL, pinnedPage, pinnedPage+2).Scan(&swept, &dirtied))
	var pinned int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:pinned'`).Scan(&pinned))
	require.Equal(t, 1, pinned, "the pinned trace is kept")
	require.Positive(t, swept, "the expired traces on the pages after it are purged")
	require.Equal(t, int64(2), dirtied, "it counts the pages it deleted from")

	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, "ANALYZE trace_ids")
			require.NoError(t, err)
		}
		plan := fmt.Sprint(explain(t, pool, db.PurgeTracePagesSQL, 0, 64))
		require.Contains(t, plan, "Tid Range Scan", "analyzed %v, plan:\n%s", analyzed, plan)
		require.NotContains(t, plan, "trace_ids_expires_at_idx", "analyzed %v, plan:\n%s", analyzed, plan)
		// The pass in expiry order, which the sweep takes over from, walks
		// the expiry index in both cases.
		plan = fmt.Sprint(explain(t, pool, db.PurgeTracesSQL, 5000, time.Time{}))
		require.Contains(t, plan, "Index Scan using trace_ids_expires_at_idx", "analyzed %v, plan:\n%s", analyzed, plan)
	}
}

// The audit-retention purge walks each audit table's index on at from
// where it stopped, with statistics that say nothing is old (taken before
// the rows aged past the retention) and with fresh ones.
func TestPurgeAuditWalksTheIndexOnAtWhateverTheStatisticsSay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `
INSERT INTO trace_events (trace_id, event, at, detail)
SELECT 'k:e-' || g, 'received', now() - g * interval '1 second', '{}' FROM generate_series(1, 20000) g;
INSERT INTO trace_purges (trace_id, at, status, received_at, expires_at)
SELECT 'k:p-' || g, now() - g * interval '1 second', 'dispatched', now() - interval '2 days', now() - interval '1 day'
FROM generate_series(1, 20000) g;
ANALYZE trace_events, trace_purges;
INSERT INTO trace_events (trace_id, event, at, detail)
SELECT 'k:old-' || g, 'received', now() - interval '200 days' + g * interval '1 second', '{}' FROM generate_series(1, 100000) g;
INSERT INTO trace_purges (trace_id, at, status, received_at, expires_at)
SELECT 'k:oldp-' || g, now() - interval '200 days' + g * interval '1 second', 'dispatched', now() - interval '202 days', now() - interval '201 days'
FROM generate_series(1, 100000) g`)
	require.NoError(t, err)
	retention := (90 * 24 * time.Hour).Milliseconds()
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, "ANALYZE trace_events, trace_purges")
			require.NoError(t, err)
		}
		for _, table := range []string{"trace_events", "trace_purges"} {
			plan := fmt.Sprint(explain(t, pool, db.PurgeAuditSQL(table), 5000, retention, time.Time{}))
			require.Contains(t, plan, "Index Scan using "+table+"_at_idx", "analyzed %v, plan:\n%s", analyzed, plan)
			require.NotContains(t, plan, "Seq Scan on "+table, "analyzed %v, plan:\n%s", analyzed, plan)
		}
	}
}
