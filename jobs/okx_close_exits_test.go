package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// An okx-swap market long of 0.03 BTC with a trailing stop (a reduce-only
// move_order_stop placed after the fill), then a close of the whole long:
// the adapter cancels the stop once the close filled, and the stop's
// follow job records it cancelled — not open, as if it still protected a
// position, and not filled.
func TestOKXSwapTrailingStopCancelledByAWholeCloseIsRecordedCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := okxfake.New(t, okxfake.Options{}) // BTCUSDT at 60000
	v, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: f.APIKey(), APISecret: f.APISecret(), Passphrase: f.Passphrase(), BaseURL: f.URL})
	require.NoError(t, err)
	fb := followOn(t, b, exchange.NewRegistry(map[string]exchange.Venue{"okx-swap": v}), nil)
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-wc-long"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	require.Equal(t, "open", out.Legs[0].Status)
	stop := out.Legs[0].ClientOrderID

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"okx-wc-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	_, err = fb.work(t, fb.queuedFollowOf(t, stop))
	require.NoError(t, err)
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM orders WHERE client_order_id = $1`, stop).Scan(&status))
	require.Equal(t, "cancelled", status, "the trailing stop the close cancelled at OKX")
	require.Equal(t, "canceled", f.AlgoOrders()[0].State)
}
