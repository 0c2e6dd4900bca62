package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// A seeded database holds what a gateway that has run a day holds: about
// n settled signals in every table a signal writes, naming each other
// (trace, events, intent, order, fill), received over the last day, none
// expired, vacuumed and analysed; the reference's tables hold as many.
// hoox then places new signals on it exactly once.
func TestSeedLiveIsADayOfSettledSignals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Setup(t)
	const n = 20000
	_, err := SeedLive(ctx, b.URL, apptest.Secret, b.DBURL, n)
	require.NoError(t, err)

	count := func(sql string) int {
		t.Helper()
		return apptest.Count(t, b.Pool, sql)
	}
	traces := count(`SELECT count(*) FROM trace_ids`)
	made := count(`SELECT count(*) FROM trace_ids WHERE trace_id NOT LIKE '%~%'`)
	require.Positive(t, made, "the warm-up run's own traces")
	require.Equal(t, made*((n+made-1)/made), traces, "whole copies of the warm-up, at least n")
	require.GreaterOrEqual(t, traces, n)

	require.Equal(t, 3*traces, count(`SELECT count(*) FROM trace_events`), "three audit rows a signal")
	require.Equal(t, traces, count(`SELECT count(*) FROM trace_ids t JOIN orders o ON o.id = t.order_id AND o.trace_id = t.trace_id AND o.client_order_id = t.client_order_id`),
		"each trace names its own order")
	require.Equal(t, traces, count(`SELECT count(*) FROM dispatch_intents i JOIN orders o USING (client_order_id) WHERE i.trace_id = o.trace_id AND i.outcome = 'dispatched'`),
		"each order has its settled intent")
	require.Equal(t, traces, count(`SELECT count(*) FROM paper_orders p JOIN orders o USING (client_order_id)`), "each order has its fill")
	require.Equal(t, traces, count(`SELECT count(DISTINCT trace_id) FROM trace_events e WHERE EXISTS (SELECT 1 FROM trace_ids t WHERE t.trace_id = e.trace_id)`))

	require.Equal(t, 0, count(`SELECT count(*) FROM trace_ids WHERE expires_at <= now()`), "nothing for a purge to take")
	require.Equal(t, 1, count(`SELECT (min(received_at) < now() - interval '22 hours' AND max(received_at) > now() - interval '1 hour')::int FROM trace_ids`),
		"received over the day")
	require.Equal(t, 0, count(`SELECT count(*) FROM pg_stat_user_tables
WHERE relname IN ('trace_ids', 'trace_events', 'dispatch_intents', 'orders', 'paper_orders', 'i', 'f', 't', 'o', 'e')
  AND (last_vacuum IS NULL OR last_analyze IS NULL)`), "vacuumed and analysed")
	require.Equal(t, 10, count(`SELECT count(*) FROM pg_stat_user_tables
WHERE relname IN ('trace_ids', 'trace_events', 'dispatch_intents', 'orders', 'paper_orders', 'i', 'f', 't', 'o', 'e')`))
	for _, table := range []string{"reference.i", "reference.f", "reference.t", "reference.o", "reference.e"} {
		require.Equal(t, traces, count(`SELECT count(*) FROM `+table), table)
	}

	rep, err := Run(ctx, LoadConfig{URL: b.URL, Secret: apptest.Secret, Workers: 4, Duration: 500 * time.Millisecond})
	require.NoError(t, err)
	conn, err := pgx.Connect(ctx, b.DBURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	chk, err := CheckRun(ctx, conn, rep)
	require.NoError(t, err)
	require.True(t, chk.OK(), "new signals on the seeded database: %+v", chk)
	require.Positive(t, chk.Orders)

	_, err = SeedLive(ctx, b.URL, apptest.Secret, b.DBURL, n)
	require.ErrorContains(t, err, "already holds", "a seed goes on an empty database only")
}
