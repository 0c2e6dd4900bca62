package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:follow-1' AND event = 'order_filled'
		AND detail->>'filled_quantity' = '0.5' AND detail->>'previous_status' = 'open'`))
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, `SELECT count(*) FROM river_job WHERE kind = 'follow' AND state = 'completed'`) == 1
	}, 30*time.Second, 50*time.Millisecond, "the job ends with the order")
}

// A cancel signal through /webhook: 200 listing the orders it cancelled, a
// repeat 409 listing the same, and with nothing left open 200 with an
// empty list. Every answer is held to the OpenAPI document.
func TestCancelSignalThroughTheWebhook(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	for _, key := range []string{"rest-1", "rest-2"} {
		r := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"`+key+`","price":"80"`))
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Equal(t, "open", r.Str("order", "status"))
	}
	cancel := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"cancel-1"}`, apptest.Secret)
	r := apptest.Post(t, b.URL, cancel)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "dispatched", r.Str("status"))
	cancelled, _ := r.Body["cancelled"].([]any)
	require.Len(t, cancelled, 2, r.Raw)
	require.Equal(t, "cancelled", cancelled[0].(map[string]any)["status"])
	require.Equal(t, 2, apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE status = 'cancelled' AND cancelled_by = 'k:cancel-1'`))

	again := apptest.Post(t, b.URL, cancel)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	orig, _ := again.Body["original"].(map[string]any)
	require.Len(t, orig["cancelled"], 2, "the repeat shows what the first attempt cancelled")

	none := apptest.Post(t, b.URL, strings.Replace(cancel, "cancel-1", "cancel-2", 1))
	require.Equal(t, http.StatusOK, none.Status, none.Raw)
	require.Contains(t, none.Raw, `"cancelled":[]`, "nothing open: an empty list")
}
