package jobs_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// Path: gateway checkExitCaps → binance.futuresExitCaps (no
// MAX_NUM_ALGO_ORDERS published: the account-wide limit of 200). The
// count is the algo orders open at Binance now, so the exits hoox itself
// has already planned for entries still resting (a limit entry's exits
// are placed only once it fills) are not counted. A trader holds 197
// stops; two limit longs with a take-profit and a stop-loss each read
// 197 open + 2 adds = 199 <= 200 and are both placed; once both fill,
// their four exits need 201 places and Binance refuses one with -4045:
// a long without the exit asked for — what the check exists to prevent.
func TestAccountAlgoLimitCountsTheExitsHooxPlannedForRestingEntries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{})
	f.SetAccountAlgoCap(197)
	f.FillAccountAlgoCap("BTCUSDT")
	f.SetAccountAlgoCap(binancefake.AccountAlgoOrderLimit)
	require.Len(t, f.AlgoOrders(), 197)
	venues := binanceVenues(t, f, binance.MarketFutures)
	fb := followOn(t, b, venues, nil)

	var entries []string
	for _, trace := range []string{"acct-plan-1", "acct-plan-2"} {
		out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"`+trace+`"}`))
		if err != nil {
			t.Logf("%s refused before it was sent: %v", trace, err)
			continue
		}
		require.Equal(t, "open", out.Order.Status)
		entries = append(entries, out.Order.ClientOrderID)
	}
	require.Len(t, entries, 1, "the second long's exits would not fit beside the first's, planned")
	for _, entry := range entries {
		require.NoError(t, f.FillOrder(entry))
		_, err := b.pool.Exec(ctx, `UPDATE orders SET status = 'filled', filled_quantity = quantity, fill_price = 2990, avg_price = 2990,
updated_at = now() - interval '1 minute' WHERE client_order_id = $1`, entry)
		require.NoError(t, err)
	}
	for _, entry := range entries {
		var lockKey string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey))
		_, err := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
		t.Logf("legs of %s: %v", entry, err)
	}
	resting := map[string]bool{}
	for _, a := range f.AlgoOrders() {
		if a.Status == "NEW" {
			resting[a.ClientAlgoID] = true
		}
	}
	rows, err := b.pool.Query(ctx, `SELECT l.client_order_id, l.role, coalesce(o.status, ''), coalesce((SELECT detail->>'reason' FROM trace_history h WHERE h.detail->>'client_order_id' = l.client_order_id ORDER BY h.id DESC LIMIT 1), '') FROM order_legs l
LEFT JOIN orders o ON o.client_order_id = l.client_order_id WHERE l.parent_client_order_id = ANY($1) ORDER BY 1`, entries)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id, role, status, reason string
		require.NoError(t, rows.Scan(&id, &role, &status, &reason))
		require.Truef(t, resting[id], "the %s %s of a placed long is not at Binance (recorded %q: %s): the long rests without it", role, id, status, reason)
	}
	require.NoError(t, rows.Err())
}
