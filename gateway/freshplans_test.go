package gateway_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// A fresh deployment's signals look their rows up by key from the first
// one on. Each connection keeps the plans it makes of hoox's statements
// (prepared statements switch to a generic plan after five runs); made
// while the tables are nearly empty and the planner believes its
// statistics, those plans read whole tables, and they are kept while the
// tables grow until autovacuum's first ANALYZE: every signal of the first
// minute read all of trace_ids, twice (issue 21, eleventh round; an
// ANALYZE of the still empty table in migration 00030 did it).
func TestAFreshDatabaseLooksSignalsUpByKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()

	// Enough signals on few connections that each connection runs every
	// statement well past the switch to a generic plan, and the tables
	// grow well past their first pages.
	const senders, each = 4, 100
	var wg sync.WaitGroup
	errs := make(chan error, senders*each)
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf(`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"fresh-%d-%d"}`, s, i)
				in, err := gateway.ParseInput([]byte(body), "", time.Now())
				if err == nil {
					var out *gateway.Outcome
					out, err = b.svc.Execute(ctx, in)
					if err == nil && out.Status != db.TraceDispatched {
						err = fmt.Errorf("trace %s ended %s", in.Trace.ID, out.Status)
					}
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	b.svc.Close()
	// A backend hands its table counters in as it exits.
	b.pool.Close()
	b.markers.Close()
	b.paperPool.Close()

	observer := pgtest.OpenPool(t, b.url)
	require.Eventually(t, func() bool {
		var others int
		err := observer.QueryRow(ctx,
			`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others)
		return err == nil && others == 0
	}, 10*time.Second, 10*time.Millisecond, "the signals' connections end")
	rows, err := observer.Query(ctx, `
		SELECT relname, coalesce(seq_scan, 0), coalesce(idx_scan, 0)
		FROM pg_stat_user_tables
		WHERE relname IN ('trace_ids', 'dispatch_intents', 'orders', 'paper_orders', 'trace_events')
		ORDER BY relname`)
	require.NoError(t, err)
	scans := map[string][2]int64{}
	for rows.Next() {
		var name string
		var seq, idx int64
		require.NoError(t, rows.Scan(&name, &seq, &idx))
		scans[name] = [2]int64{seq, idx}
	}
	require.NoError(t, rows.Err())
	require.GreaterOrEqual(t, scans["trace_ids"][1], int64(senders*each), "every signal's lookups of its trace are counted")
	for name, s := range scans {
		require.Zero(t, s[0], "sequential scans of %s by %d signals on a fresh database (index scans: %d)", name, senders*each, s[1])
	}
}
