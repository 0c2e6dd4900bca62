package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// A Binance USDⓈ-M market long of 1 ETHUSDT with a take-profit and a
// stop-loss (reduce-only algo orders placed after the fill), then a close
// of the whole long: the adapter cancels the two exits once the close
// filled, and each exit's follow job records it cancelled — as paper's
// resting closes cancelled by a close of the whole position are.
func TestBinanceFuturesExitsCancelledByAWholeCloseAreRecordedCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	fb := followOn(t, b, binanceVenues(t, f, binance.MarketFutures), nil)
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"wc-long"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)
	for _, l := range out.Legs {
		require.Equal(t, "open", l.Status, l.Role)
	}

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"wc-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	for _, l := range out.Legs {
		_, err := fb.work(t, fb.queuedFollowOf(t, l.ClientOrderID))
		require.NoError(t, err)
		var status string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM orders WHERE client_order_id = $1`, l.ClientOrderID).Scan(&status))
		require.Equalf(t, "cancelled", status, "the %s the close cancelled at Binance", l.Role)
	}
	for _, a := range f.AlgoOrders() {
		require.Equal(t, "CANCELED", a.Status, a.ClientAlgoID)
	}
}
