package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
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

// An okx-swap long of 0.03 BTC with a trailing stop, then a close of the
// whole long whose answer is lost (a 502 after OKX took it): the gateway
// answers reconciling, and the reconcile job adopts the close filled.
// That is where hoox learns the long is gone: the trailing stop is
// cancelled there (the adoption's event says so) and its follow job
// records it cancelled — not left live to sell the strategy's next long.
func TestOKXSwapTrailingStopOfAWholeCloseAdoptedByTheReconcileIsCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := okxfake.New(t, okxfake.Options{}) // BTCUSDT at 60000
	v, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: f.APIKey(), APISecret: f.APISecret(), Passphrase: f.Passphrase(), BaseURL: f.URL})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"okx-swap": v})
	fb := followOn(t, b, venues, nil)
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-lost-close-long"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	stop := out.Legs[0].ClientOrderID

	f.Inject(okxfake.Fault{Kind: okxfake.FaultServerErrorAfterAccept})
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"okx-lost-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, cl.Status)
	require.True(t, f.Position("BTC-USDT-SWAP").IsZero(), "OKX filled the close")

	reconcileNow(t, b, venues, "k:okx-lost-close")
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:okx-lost-close"))
	require.Equal(t, "canceled", f.TrailingStops()[0].State, "the closed long's trailing stop is still live at OKX")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-lost-close'
		AND jsonb_array_length(detail->'cancelled_first') = 1`), "the adoption's event lists the stop the close cancelled")
	_, err = fb.work(t, fb.queuedFollowOf(t, stop))
	require.NoError(t, err)
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM orders WHERE client_order_id = $1`, stop).Scan(&status))
	require.Equal(t, "cancelled", status)
}
