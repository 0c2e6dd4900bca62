package db_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// trace_history is a view over trace_events and trace_purges (migration
// 00029): a trace's timeline and the stats read each table through its own
// index, however many rows there are and whatever the statistics say, so
// the view costs the audit nothing against one table.
func TestTraceHistoryReadsBothTablesThroughTheirIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := pool.Exec(ctx, `
INSERT INTO trace_events (trace_id, event, at, detail)
SELECT 'k:e-' || g, 'received', now() - interval '100 days' + g * interval '1 second', '{}'
FROM generate_series(1, 20000) g;
INSERT INTO trace_purges (trace_id, at, status, received_at, expires_at)
SELECT 'k:p-' || g, now() - interval '100 days' + g * interval '1 second', 'dispatched',
       now() - interval '101 days', now() - interval '100 days'
FROM generate_series(1, 20000) g`)
	require.NoError(t, err)
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, "ANALYZE trace_events, trace_purges")
			require.NoError(t, err)
		}
		for _, q := range []struct {
			sql     string
			args    []any
			indexes []string
		}{
			{db.TraceEventsSQL, []any{"k:p-7"}, []string{"trace_events_pkey", "trace_purges_trace_id_idx"}},
			{`SELECT at, trace_id, event FROM trace_history WHERE trace_id = ANY($1) ORDER BY at, id`, []any{[]string{"k:p-7", "k:e-9"}},
				[]string{"trace_events_pkey", "trace_purges_trace_id_idx"}},
			{db.StatsEventsSQL, nil, []string{"trace_events_at_idx", "trace_purges_at_idx"}},
			{db.SeriesCountsSQL, []any{60, []string{"received", "purged"}}, []string{"trace_events_at_idx", "trace_purges_at_idx"}},
		} {
			plan := fmt.Sprint(explain(t, pool, q.sql, q.args...))
			for _, idx := range q.indexes {
				require.Contains(t, plan, idx, "analyzed %v, plan:\n%s", analyzed, plan)
			}
			require.NotContains(t, plan, "Seq Scan", "analyzed %v, plan:\n%s", analyzed, plan)
		}
	}
}
