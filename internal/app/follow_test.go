package app_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// A limit order rests open, is followed by a job, and is recorded filled —
// with its average price and an order_filled event on its trace — once the
// price crosses it; the job then ends.
func TestLimitOrderIsFollowedUntilItFills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := apptest.Setup(t)
	r := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"follow-1","order_type":"limit","price":"90"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "open", r.Str("order", "status"))
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM river_job WHERE kind = 'follow'`),
		"the open order is followed by one job, committed with it")

	// The price has not reached the limit: nothing fills.
	n, err := b.App.Paper().SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("95"))
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = b.App.Paper().SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("89.5"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:follow-1' AND status = 'filled'
			AND filled_quantity = 0.5 AND avg_price = 90 AND final_at IS NOT NULL`) == 1
	}, 30*time.Second, 50*time.Millisecond, "the follow job records the fill")
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM trace_events WHERE trace_id = 'k:follow-1' AND event = 'order_filled'
		AND detail->>'filled_quantity' = '0.5' AND detail->>'previous_status' = 'open'`))
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, `SELECT count(*) FROM river_job WHERE kind = 'follow' AND state = 'completed'`) == 1
	}, 30*time.Second, 50*time.Millisecond, "the job ends with the order")
}
