package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// A trader's okx-swap strategy: a market long of 0.03 BTC with a trailing
// stop (placed by hoox after the fill as its own reduce-only
// move_order_stop algo order for 3 contracts), then the strategy's own
// `close`, then, later, the next long of 0.03 without exits. OKX cancels
// a TP/SL algo order when the position is fully closed only if it was
// placed with cxlOnClosePos, a parameter of conditional and oco orders,
// not of trailing stops (Post_Place_Algo_Order.md): the old long's
// trailing stop stays live, and when the price comes back by its
// callback it sells 3 contracts of whatever long is open — the new one,
// which the strategy never asked to exit. The close cancels it once it
// filled; its dispatched event lists it (cancelled_first).
func TestOKXSwapWholeCloseCancelsTheEntrysTrailingStopBeforeTheNextLong(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	const inst = "BTC-USDT-SWAP"

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-close-long-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, out.Legs, 1)
	require.Equal(t, exchange.RoleTrailingStop, out.Legs[0].Role)
	require.Equal(t, string(exchange.StatusOpen), out.Legs[0].Status)
	stop := out.Legs[0].ClientOrderID

	cl, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"okx-close-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.True(t, b.okx.Position(inst).IsZero(), "the close flattened the long")
	for _, a := range b.okx.AlgoOrders() {
		if a.State == "live" {
			t.Errorf("after the whole position was closed, the closed long's reduce-only %s %s of %s contracts still rests at OKX",
				a.Side, a.OrdType, a.Sz)
		}
	}
	assert.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-close-1' AND event = 'dispatched'
		AND jsonb_array_length(detail->'cancelled_first') = 1
		AND detail->'cancelled_first' @> '[{"client_order_id":"`+stop+`","placed_by_hoox":true}]'`), "the close's event lists the stop it cancelled")

	// The next long, without exits; the price then comes back by 1.5 %.
	next, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03","trace_id":"okx-close-long-2"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)
	require.True(t, decimal.NewFromInt(3).Equal(b.okx.Position(inst)))
	_ = b.okx.TriggerAlgo(stop)
	require.Truef(t, decimal.NewFromInt(3).Equal(b.okx.Position(inst)),
		"the new long (no exits asked) was sold by the closed long's trailing stop: position now %s contracts", b.okx.Position(inst))
}

// An okx-swap long of 0.03 BTC with a take-profit and a stop-loss on the
// entry (attachAlgoOrds): once it filled, OKX generates an oco TP/SL algo
// order under the attachAlgoClOrdId hoox sent. Whether OKX cancels it when
// the position is closed is not documented (attachAlgoOrds takes no
// cxlOnClosePos), so the fake keeps it live. The strategy's close of the
// whole long cancels it; the next long, without exits, is not sold by the
// closed long's stop-loss.
func TestOKXSwapWholeCloseCancelsTheEntrysAttachedTPSLBeforeTheNextLong(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	const inst = "BTC-USDT-SWAP"

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"take_profit":"62000","stop_loss":"58000","trace_id":"okx-tpsl-long-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	algos := b.okx.AlgoOrders()
	require.Len(t, algos, 1, "OKX generated the TP/SL once the entry filled")
	tpsl := algos[0]
	require.Equal(t, "oco", tpsl.OrdType)
	require.Equal(t, okx.AttachedAlgoID(out.Order.ClientOrderID), tpsl.AlgoClOrdID)

	cl, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"okx-tpsl-close-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.True(t, b.okx.Position(inst).IsZero())
	if st := b.okx.AlgoOrders()[0].State; st == "live" {
		t.Errorf("after the whole position was closed, the closed long's %s TP/SL still rests at OKX", tpsl.OrdType)
	}
	assert.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-tpsl-close-1' AND event = 'dispatched'
		AND detail->'cancelled_first' @> '[{"client_order_id":"`+tpsl.AlgoClOrdID+`","placed_by_hoox":true}]'`), "the close's event lists the TP/SL it cancelled")

	next, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03","trace_id":"okx-tpsl-long-2"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)
	_ = b.okx.TriggerAlgo(tpsl.AlgoClOrdID)
	require.Truef(t, decimal.NewFromInt(3).Equal(b.okx.Position(inst)),
		"the new long (no exits asked) was sold by the closed long's stop-loss: position now %s contracts", b.okx.Position(inst))
}
