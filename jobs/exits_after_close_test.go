package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// A limit long of 1 ETHUSDT with a take-profit and a stop-loss fills at
// Binance USDⓈ-M; the first pass over its exits does not reach Binance
// (left planned, for the sweeper — as in
// TestPlannedExitIsNotPlacedAfterItsSiblingFilled). Before the sweeper's
// pass, the strategy closes the long (a plain close signal). The sweeper
// then places both exits — reduce-only SELL orders for 1 ETHUSDT — on the
// flat position, where they rest and cut the symbol's next long. The
// position they were to protect is gone: neither a sibling fill nor a
// cancel signal ended it, so neither check (FilledSiblingExit, the cancel's
// not_placed) stops them, and PositionBefore (read before the entry) says
// nothing about the position at the exits' send. Bybit's trailing leg reads
// the position at its send (bybit.placeTrailing) and sets nothing on a flat
// one; the Binance legs do not.
func TestPlannedExitsAreNotPlacedAfterThePositionWasClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, venues, out := filledFuturesEntryWithExits(t, "exits2-closed-before-legs")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	flaky := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": failPlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, flaky, nil, nil).Finish(ctx, lockKey, entry)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Empty(t, f.AlgoOrders())

	// The strategy exits: the long is closed.
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"exits2-close"}`))
	require.NoError(t, err)
	t.Logf("close: %s %s", cl.Status, cl.Order.Status)
	require.True(t, f.Position("ETHUSDT").IsZero(), "the close flattened the long")

	// The sweeper finishes the open legs, past its grace: the entry's fill
	// was recorded a while ago, so the position read is the settled one.
	_, err = b.pool.Exec(ctx, `UPDATE orders SET updated_at = now() - interval '1 minute' WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s rests at Binance on the flat ETHUSDT position (the long it was to protect was closed before it was sent)",
			a.Side, a.Type, a.Quantity)
	}
}

// The same without any fault. A limit long with a take-profit and a
// stop-loss rests at Binance USDⓈ-M; it fills, and before its follow job's
// next look (a quarter of the order's age, up to 5 minutes) the strategy's
// exit closes the long. The follow job then records the fill, which plans
// the exits, and its Finish places both — reduce-only SELL orders for the
// whole entry — on the flat position.
func TestLimitEntryClosedBeforeItsFillIsSeenGetsNoExits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	venues := binanceVenues(t, f, binance.MarketFutures)
	fb := followOn(t, b, venues, nil)
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"exits2-limit"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	entry := out.Order.ClientOrderID
	args := fb.queuedFollowOf(t, entry)

	require.NoError(t, f.FillOrder(entry))
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"exits2-limit-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	require.True(t, f.Position("ETHUSDT").IsZero(), "the strategy's close flattened the long")

	_, err = fb.work(t, args)
	require.NoError(t, err)
	require.Equal(t, "filled", orderStatus(t, b, entry))
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s rests at Binance on the flat ETHUSDT position",
			a.Side, a.Type, a.Quantity)
	}
}
