package jobs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// Bybit cancels a position's trailing stop "if the position is closed"
// (docs/v5/position/trading-stop.mdx:10). A long with a 1 % trailing stop
// (600 at 60000), the strategy's close of the whole long, then the next
// long with the same 1 %: the position again trails by 600, but that is
// the second entry's setting. The first entry's stop ended with the
// position it protected; it is recorded ended (expired), not open as if
// it still protected the new long.
func TestBybitTrailingStopOfAClosedLongIsNotRecordedOpenOnTheNextLong(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000
	fb := followOn(t, b, exchange.NewRegistry(map[string]exchange.Venue{"bybit": v}), nil)

	first, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"trail-close-a"}`))
	require.NoError(t, err)
	require.Len(t, first.Legs, 1)
	require.Equal(t, "open", first.Legs[0].Status)
	trailA := first.Legs[0].ClientOrderID

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"trail-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "Bybit dropped the closed position's trailing stop")

	second, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"trail-close-b"}`))
	require.NoError(t, err)
	require.Len(t, second.Legs, 1)
	require.Equal(t, "open", second.Legs[0].Status)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())

	res, err := fb.work(t, fb.queuedFollowOf(t, trailA))
	require.NoError(t, err)
	row, err := db.GetOrder(ctx, fb.pool, trailA)
	require.NoError(t, err)
	require.Equalf(t, string(exchange.StatusExpired), row.Status,
		"the closed long's trailing stop is recorded %s (job %s) while Bybit cancelled it with its position", row.Status, res.EventKind)

	// The next long's own stop, set after the close, is the one the
	// position holds.
	_, err = fb.work(t, fb.queuedFollowOf(t, second.Legs[0].ClientOrderID))
	require.NoError(t, err)
	row, err = db.GetOrder(ctx, fb.pool, second.Legs[0].ClientOrderID)
	require.NoError(t, err)
	require.Equal(t, string(exchange.StatusOpen), row.Status)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())
}

// The same as TestBybitTrailingStopOfAClosedLongIsNotRecordedOpenOnTheNextLong,
// on an account that also trades another symbol: between the BTCUSDT
// long's trailing stop and the BTCUSDT close, the strategy opened and
// closed ETHUSDT 101 times (each close of the whole ETH long left ETH flat,
// its dispatched event says position_closed). db.PositionClosedSince once
// read the venue's first 100 such closes after the leg's send, of any
// symbol, and only then kept the leg's symbol's: the BTCUSDT close, the
// 102nd, was never seen, and the closed long's stop was recorded open
// again on the next long with the same distance.
func TestBybitTrailingStopOfAClosedLongIsNotRecordedOpenAfterOtherSymbolsCloses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000, ETHUSDT at 3000
	fb := followOn(t, b, exchange.NewRegistry(map[string]exchange.Venue{"bybit": v}), nil)

	first, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"rd-trail-a"}`))
	require.NoError(t, err)
	require.Len(t, first.Legs, 1)
	require.Equal(t, "open", first.Legs[0].Status)
	trailA := first.Legs[0].ClientOrderID

	for i := range 101 {
		long, err := fb.gw.Execute(ctx, input(t, fmt.Sprintf(`{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"0.1","trace_id":"rd-eth-long-%d"}`, i)))
		require.NoError(t, err)
		require.Equal(t, "filled", long.Order.Status)
		cl, err := fb.gw.Execute(ctx, input(t, fmt.Sprintf(`{"exchange":"bybit","symbol":"ETHUSDT","action":"close","quantity":"100%%","trace_id":"rd-eth-close-%d"}`, i)))
		require.NoError(t, err)
		require.Equal(t, "filled", cl.Order.Status)
	}

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"rd-trail-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "Bybit dropped the closed position's trailing stop")

	second, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"rd-trail-b"}`))
	require.NoError(t, err)
	require.Len(t, second.Legs, 1)
	require.Equal(t, "open", second.Legs[0].Status)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())

	res, err := fb.work(t, fb.queuedFollowOf(t, trailA))
	require.NoError(t, err)
	row, err := db.GetOrder(ctx, fb.pool, trailA)
	require.NoError(t, err)
	require.Equalf(t, string(exchange.StatusExpired), row.Status,
		"the closed long's trailing stop is recorded %s (job %s) while Bybit cancelled it with its position", row.Status, res.EventKind)
}
