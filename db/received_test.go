package db_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// The trace row is its own `received` event while it lives (migration
// 00025); the purge and a release write it out as a row in the statement
// that deletes the trace. The audit must read the same before and after:
// the same id, time, source IP and detail, in the same place.
func TestReceivedEventReadsTheSameAfterReleaseAndPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	history := func(traceID string) []string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT id, at, event, host(source_ip), detail::text FROM trace_events
			WHERE trace_id = $1 ORDER BY at, id`, traceID)
		require.NoError(t, err)
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id int64
			var at time.Time
			var event, detail string
			var ip *string
			require.NoError(t, rows.Scan(&id, &at, &event, &ip, &detail))
			out = append(out, fmt.Sprintf("%d %s %s %s %s", id, at.Format(time.RFC3339Nano), event, deref(ip), detail))
		}
		require.NoError(t, rows.Err())
		return out
	}
	settle := func(traceID string) []string {
		t.Helper()
		tx, res := claim(t, pool, claimParams(traceID))
		require.True(t, res.Claimed)
		require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: traceID, Status: db.TraceRejected,
			Events: []db.Event{{TraceID: traceID, Event: db.EventRejected, SourceIP: claimParams(traceID).SourceIP}}}))
		h := history(traceID)
		require.Len(t, h, 2)
		require.Contains(t, h[0], ` received 52.89.214.238 {"key_source": "client", "fingerprint": "fp-`+traceID+`"}`)
		require.Contains(t, h[1], " rejected ")
		require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_event_rows WHERE trace_id = $1 AND event = 'received'`, traceID),
			"a live trace's received event is its row, not an event row")
		return h
	}

	released := settle("k:rcv-released")
	_, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:rcv-released", By: "admin", LockWait: time.Second})
	require.NoError(t, err)
	after := history("k:rcv-released")
	require.Len(t, after, 3)
	require.Equal(t, released, after[:2], "the release wrote the received event out as it was")
	require.Contains(t, after[2], " released ")

	purged := settle("k:rcv-purged")
	_, err = pool.Exec(ctx, `UPDATE trace_ids SET expires_at = now() - interval '1 second' WHERE trace_id = 'k:rcv-purged'`)
	require.NoError(t, err)
	res, err := db.Purge(ctx, pool, db.PurgeParams{})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Traces)
	after = history("k:rcv-purged")
	require.Len(t, after, 3)
	require.Equal(t, purged, after[:2], "the purge wrote the received event out as it was")
	require.Contains(t, after[2], " purged ")
	require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids`), "both traces are gone")
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}
