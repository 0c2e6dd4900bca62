package jobs_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// The last look at an entry whose trace was purged or released records
// what it finds: a resting limit entry filled in part since the previous
// look and still open is unfollowed with its partial fill recorded (the
// row, the order_partially_filled event, and the order_unfollowed event
// that asks a human to watch the order saying what filled), not dropped.
func TestLastLookAfterThePurgeRecordsAPartialFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, fb := futuresFollowing(t) // ETHUSDT at 3000
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","trace_id":"purged-part"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := fb.queuedFollow(t, "k:purged-part")

	require.NoError(t, f.PartialFill(out.Order.ClientOrderID, decimal.RequireFromString("0.5")))
	_, err = b.pool.Exec(ctx, `DELETE FROM trace_ids WHERE trace_id = 'k:purged-part'`)
	require.NoError(t, err)

	res, err := fb.work(t, args)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:purged-part' AND unfollowed_at IS NOT NULL`),
		"still open at the venue: unfollowed")
	var recorded, said string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT filled_quantity::text FROM orders WHERE trace_id = 'k:purged-part'`).Scan(&recorded))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT detail->>'filled_quantity' FROM trace_history
		WHERE trace_id = 'k:purged-part' AND event = 'order_unfollowed'`).Scan(&said))
	require.True(t, decimal.RequireFromString(recorded).Equal(decimal.RequireFromString("0.5")),
		"the last look saw 0.5 ETH filled at the venue, but the row records %s", recorded)
	require.True(t, decimal.RequireFromString(said).Equal(decimal.RequireFromString("0.5")),
		"order_unfollowed tells the operator %s filled; the venue filled 0.5", said)
}
