package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
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

// reconcileNow works the reconcile job the gateway queued for traceID.
func reconcileNow(t *testing.T, b *testBundle, venues *exchange.Registry, traceID string) {
	t.Helper()
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, venues, nil, jobs.NewMetrics(nil))
	_, err := newWorkerFor(t, w).Work(context.Background(), t, beginTx(t, b.pool), queuedReconcile(t, b, traceID), nil)
	require.NoError(t, err)
}

// requireExitsCancelled requires each of legs' algo orders cancelled at
// Binance, and each recorded cancelled once its follow job has looked.
func requireExitsCancelled(t *testing.T, eb *exitsBundle, legs []db.OrderRow, why string) {
	t.Helper()
	status := map[string]string{}
	for _, a := range eb.fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	for _, l := range legs {
		require.Equalf(t, "CANCELED", status[l.ClientOrderID], "%s: the closed long's %s still rests at Binance", why, l.Role)
		_, err := eb.work(t, eb.queuedFollowOf(t, l.ClientOrderID))
		require.NoError(t, err)
		require.Equal(t, "cancelled", eb.row(t, l.ClientOrderID).Status, l.Role)
	}
}

// A close of the whole Binance USDⓈ-M long whose answer is lost (the
// connection dropped after Binance filled it): the gateway answers
// reconciling, and the reconcile job adopts the close filled. That is
// where hoox learns the long is gone: its take-profit and stop-loss are
// cancelled there, and the exits' follow jobs record them cancelled —
// not left resting to sell the strategy's next long.
func TestBinanceFuturesExitsOfAWholeCloseAdoptedByTheReconcileAreCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, venues, fb := futuresFollowing(t) // ETHUSDT at 3000
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"lost-close-long"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)

	f.Inject(binancefake.Fault{Kind: binancefake.FaultDropAfterAccept})
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"lost-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, cl.Status)
	require.True(t, f.Position("ETHUSDT").IsZero(), "Binance filled the close")

	reconcileNow(t, b, venues, "k:lost-close")
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:lost-close"))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:lost-close'
		AND jsonb_array_length(detail->'cancelled_first') = 2`), "the adoption's event lists the exits the close cancelled")
	requireExitsCancelled(t, &exitsBundle{followBundle: fb, fake: f}, out.Legs, "the reconcile adopted the close filled")
}

// A close of the whole Binance USDⓈ-M long that Binance answers NEW and
// does not finish while Place confirms it: the reconcile records it open,
// and its follow job is where hoox learns it filled. While it rests, the
// long's exits keep protecting the long; once the follow job sees it
// filled they are cancelled.
func TestBinanceFuturesExitsOfAWholeCloseTheFollowJobSeesFilledAreCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		ConfirmWait: 200 * time.Millisecond})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v})
	eb := &exitsBundle{followBundle: followOn(t, b, venues, nil), fake: f}
	out, err := eb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"held-close-long"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)

	f.HoldMarketOrders(1, 0)
	cl, err := eb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"held-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, cl.Status)
	closeID := queuedReconcile(t, b, "k:held-close").Order.ClientOrderID
	// Still executing past the reconcile's wait for a market order: it
	// is recorded open, and followed.
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '10 minutes' WHERE client_order_id = $1`, closeID)
	require.NoError(t, err)
	reconcileNow(t, b, venues, "k:held-close")
	require.Equal(t, "open", eb.row(t, closeID).Status)
	for _, a := range f.AlgoOrders() {
		require.Equal(t, "NEW", a.Status, "while the close has not filled, the exits protect the long")
	}

	require.NoError(t, f.FillOrder(closeID))
	_, err = eb.work(t, eb.queuedFollowOf(t, closeID))
	require.NoError(t, err)
	require.Equal(t, "filled", eb.row(t, closeID).Status)
	requireExitsCancelled(t, eb, out.Legs, "the follow job saw the close filled")
}
