package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// Path: gateway checkExitCaps → db.PlannedExits (plannedExitsSQL's second
// count: orders status 'open' whose intent plans exits and has no legs).
// A limit entry whose trace was purged (HOOX_TRACE_TTL) or released is
// recorded no longer followed (README: unfollowed_at, the row keeps its
// last known state, 'open'): hoox never records its fill nor places its
// exits any more. Its planned exits are still counted, for ever — orders
// and intents are never purged — so every such entry takes two places of
// the account's 200 for good. Here the trader then cancelled it by hand;
// 197 stops rest, a new long's two exits fit (199 <= 200), but the long
// is refused "hoox has 2 more planned for entries not filled yet".
func TestUnfollowedLimitEntryIsNotCountedAsPlannedExits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, fb := futuresFollowing(t) // ETHUSDT at 3000

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"ghost-1"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	ghost := out.Order.ClientOrderID
	// Its trace purged: the follow job's last look records it unfollowed
	// (jobs/follow.go, db unfollowSQL). The trader cancels it at Binance.
	_, err = b.pool.Exec(ctx, `UPDATE orders SET unfollowed_at = now() WHERE client_order_id = $1 AND status = 'open'`, ghost)
	require.NoError(t, err)
	require.NoError(t, f.CancelOrder(ghost))

	f.SetAccountAlgoCap(197)
	f.FillAccountAlgoCap("BTCUSDT")
	f.SetAccountAlgoCap(binancefake.AccountAlgoOrderLimit)
	require.Len(t, f.AlgoOrders(), 197)

	out, err = fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"after-ghost"}`))
	require.NoError(t, err, "197 open + 2 adds fit in 200; the unfollowed entry will never have exits placed by hoox")
	require.Equal(t, "open", out.Order.Status)
}
