package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// A trader's Binance USDⓈ-M strategy: a market long of 1 ETHUSDT with a
// take-profit and a stop-loss (placed by hoox as reduce-only algo orders
// after the fill), then the strategy's own exit — a `close` of 100 % of
// the position — then, later, the next long of 1 without exits. The
// README says of USDⓈ-M that "only a close of the whole position cancels"
// resting take-profits/stop-losses. The algo orders are not in
// /fapi/v1/openOrders and do not make Binance refuse the close with
// -2022, so cancelBlocking never sees them: left resting, the old long's
// SELL stop-loss would sell, once the price falls to it, the new long the
// strategy never asked to exit. The close cancels them once it filled,
// and its dispatched event lists them (cancelled_first), as a close
// behind -2022 lists its blockers.
func TestFuturesWholeCloseCancelsTheEntrysExitsBeforeTheNextLong(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2900","trace_id":"e2e-long-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.True(t, decimal.NewFromInt(1).Equal(b.binance.Position("ETHUSDT")))
	require.Len(t, b.binance.AlgoOrders(), 2, "take-profit and stop-loss rest as algo orders")
	for _, leg := range out.Legs {
		require.Equal(t, string(exchange.StatusOpen), leg.Status, leg.Role)
	}

	cl, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"e2e-close-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.True(t, b.binance.Position("ETHUSDT").IsZero(), "the close flattened the long")

	for _, a := range b.binance.AlgoOrders() {
		if a.Status == "NEW" {
			t.Errorf("after the whole position was closed, the closed long's reduce-only %s %s of %s (trigger %s) still rests at Binance",
				a.Side, a.Type, a.Quantity, a.TriggerPrice)
		}
	}

	require.Len(t, out.Legs, 2)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:e2e-close-1' AND event = 'dispatched'
		AND jsonb_array_length(detail->'cancelled_first') = 2
		AND detail->'cancelled_first' @> '[{"client_order_id":"`+out.Legs[0].ClientOrderID+`","placed_by_hoox":true},{"client_order_id":"`+
		out.Legs[1].ClientOrderID+`","placed_by_hoox":true}]'`), "the close's event lists the exits it cancelled")

	// The next long, without exits.
	next, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"e2e-long-2"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)
	require.True(t, decimal.NewFromInt(1).Equal(b.binance.Position("ETHUSDT")))

	b.binance.MovePrice("ETHUSDT", decimal.NewFromInt(2890))
	require.Truef(t, decimal.NewFromInt(1).Equal(b.binance.Position("ETHUSDT")),
		"the new long (no exits asked) was sold by the closed long's stop-loss: position now %s", b.binance.Position("ETHUSDT"))
}

// A Binance USDⓈ-M long of 150 ETH (two entries of 75, each with its
// take-profit and stop-loss) closed with one `close`: above the maximum
// market quantity (100), the close is sent as a part of 100 and a part
// of 50. The part that leaves the position flat is where the long is
// gone: the four exits are cancelled then, so the next long (no exits
// asked) is not sold by the old stop-losses.
func TestFuturesSplitCloseCancelsTheEntrysExitsBeforeTheNextLong(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bigETH(b.binance)

	var exits []string
	for _, trace := range []string{"split-exits-long-1", "split-exits-long-2"} {
		out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"75",
			"take_profit":"3300","stop_loss":"2900","trace_id":"`+trace+`"}`))
		require.NoError(t, err)
		require.Equal(t, db.TraceDispatched, out.Status)
		require.Len(t, out.Legs, 2)
		for _, l := range out.Legs {
			exits = append(exits, l.ClientOrderID)
		}
	}
	require.Equal(t, "150", b.binance.Position("ETHUSDT").String())

	cl, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"split-exits-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.Len(t, cl.Legs, 1, "split in two parts")
	require.True(t, b.binance.Position("ETHUSDT").IsZero(), "the split close flattened the long")
	status := map[string]string{}
	for _, a := range b.binance.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	for _, id := range exits {
		require.Equalf(t, "CANCELED", status[id], "after the split close flattened the long, its exit %s still rests at Binance", id)
	}

	next, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"split-exits-next"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)
	b.binance.MovePrice("ETHUSDT", decimal.NewFromInt(2890))
	require.Truef(t, decimal.NewFromInt(1).Equal(b.binance.Position("ETHUSDT")),
		"the new long (no exits asked) was sold by the closed long's stop-loss: position now %s", b.binance.Position("ETHUSDT"))
}
