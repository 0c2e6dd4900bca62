package gateway_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/jobs"
)

// Strategy B rested a limit long with a stop-loss on Binance USDⓈ-M
// before the upgrade (fix-cancelscope). Its intent settled dispatched
// (the order is open), so migration 00046 filled the entry row's strategy
// but left the intent's planned Legs[].Order without one: it adds
// Strategy to the Legs of unsettled intents only (outcome NULL / failed /
// reconciling). The state below is exactly what 00046 leaves. The long
// fills after the upgrade: plan_order_legs_of copies the Legs into
// order_legs, the leg runner records B's stop-loss with no strategy
// (db.NewOrderRow), and strategy A's cancel of its own resting entry
// takes B's stop-loss (cancelTakes: nil takes all): B's long is left
// unprotected, the defect fix-cancelscope was to end.
func TestStrategysCancelLeavesAPreUpgradeRestingEntrysStopLoss(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bEntry, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2500","stop_loss":"2000","strategy":"b","trace_id":"pre-b"}`))
	require.NoError(t, err)
	require.Equal(t, "open", bEntry.Order.Status)
	id := bEntry.Order.ClientOrderID

	// Before the upgrade: no Strategy in the order_spec (nor its Legs),
	// orders.strategy NULL off spot. Then 00046's UPDATEs, as they run.
	_, err = b.pool.Exec(ctx, `
UPDATE dispatch_intents SET order_spec = (order_spec - 'Strategy') || jsonb_build_object('Legs',
    (SELECT jsonb_agg(jsonb_set(l.leg, '{Order}', (l.leg->'Order') - 'Strategy') ORDER BY n)
     FROM jsonb_array_elements(order_spec->'Legs') WITH ORDINALITY AS l(leg, n)))
WHERE client_order_id = $1`, id)
	require.NoError(t, err)
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = '`+id+`'
		AND (order_spec ? 'Strategy' OR order_spec->'Legs'->0->'Order' ? 'Strategy')`))
	_, err = b.pool.Exec(ctx, `UPDATE orders SET strategy = NULL WHERE client_order_id = $1`, id)
	require.NoError(t, err)
	migration00046(t, b)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+id+`' AND strategy = 'b'`),
		"00046 gave the open entry B's strategy")

	// After the upgrade: B's long fills; the follow job records it, which
	// plans the stop-loss; the leg runner places it.
	require.NoError(t, b.binance.FillOrder(id))
	ok, err := db.ApplyOrderUpdate(ctx, b.pool, id, db.OrderUpdate{Status: exchange.StatusFilled,
		FilledQuantity: decimal.NewFromInt(1), AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(2500)),
		FillPrice: decimal.NewNullDecimal(decimal.NewFromInt(2500))}, nil)
	require.NoError(t, err)
	require.True(t, ok)
	var lockKey, stop string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs WHERE parent_client_order_id = $1`, id).
		Scan(&lockKey, &stop))
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil).Finish(ctx, lockKey, id)
	require.NoError(t, err)
	require.True(t, restingAt(t, b, "binance-futures", stop), "B's stop-loss rests at Binance")

	// Strategy A rests its own limit entry and cancels it.
	aEntry, err := b.svc.Execute(ctx, input(t, restingEntries["binance-futures"]+`,"strategy":"a","trace_id":"post-a"}`))
	require.NoError(t, err)
	cancel, err := b.svc.Execute(ctx, input(t, cancelOf("binance-futures", "a", "post-a-cancel")))
	require.NoError(t, err)
	require.Truef(t, restingAt(t, b, "binance-futures", stop),
		"strategy A's cancel cancelled strategy B's stop-loss %s (cancelled: %v): B's long is unprotected", stop, cancelIDs(cancel.Cancelled))
	require.Equal(t, []string{aEntry.Order.ClientOrderID}, cancelIDs(cancel.Cancelled))
}

// The same gap on Bybit linear, where it reaches the position setting the
// fix-cancelscope decision protects: strategy B rested a limit long with a
// trailing stop before the upgrade; it fills after, and its trailing stop
// (a leg planned from the intent's Legs, which 00046 left without
// Strategy) is recorded with no strategy. Strategy A goes long with its
// own trailing stop and cancels under its name. sharedSettings counts B's
// strategy-less trailing stop as A's own (cancelTakes: nil takes all), so
// nothing is "shared", and A's cancel clears the position's one
// trailingStop (trading-stop.mdx:38, "0 means cancel TS"): B's long no
// longer trails.
func TestStrategysCancelKeepsAPreUpgradeEntrysBybitTrailingStop(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bEntry, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2500","trailing_stop":{"distance":40},"strategy":"b","trace_id":"pre-bt"}`))
	require.NoError(t, err)
	require.Equal(t, "open", bEntry.Order.Status)
	id := bEntry.Order.ClientOrderID
	_, err = b.pool.Exec(ctx, `
UPDATE dispatch_intents SET order_spec = (order_spec - 'Strategy') || jsonb_build_object('Legs',
    (SELECT jsonb_agg(jsonb_set(l.leg, '{Order}', (l.leg->'Order') - 'Strategy') ORDER BY n)
     FROM jsonb_array_elements(order_spec->'Legs') WITH ORDINALITY AS l(leg, n)))
WHERE client_order_id = $1`, id)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET strategy = NULL WHERE client_order_id = $1`, id)
	require.NoError(t, err)
	migration00046(t, b)

	require.True(t, b.bybit.PartialFill("linear", id, decimal.NewFromInt(2)))
	ok, err := db.ApplyOrderUpdate(ctx, b.pool, id, db.OrderUpdate{Status: exchange.StatusFilled,
		FilledQuantity: decimal.NewFromInt(2), AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(2500)),
		FillPrice: decimal.NewNullDecimal(decimal.NewFromInt(2500))}, nil)
	require.NoError(t, err)
	require.True(t, ok)
	var lockKey string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1`, id).Scan(&lockKey))
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil).Finish(ctx, lockKey, id)
	require.NoError(t, err)
	require.Equal(t, "40", b.bybit.TrailingStop("ETHUSDT").String(), "B's trailing stop is set on the position")

	aLong, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"1",
		"trailing_stop":{"distance":50},"strategy":"a","trace_id":"post-at"}`))
	require.NoError(t, err)
	require.Len(t, aLong.Legs, 1)
	set := b.bybit.TrailingStop("ETHUSDT")
	require.True(t, set.IsPositive())

	cancel, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "a", "post-at-cancel")))
	require.NoError(t, err)
	require.Truef(t, b.bybit.TrailingStop("ETHUSDT").IsPositive(),
		"strategy A's cancel cleared the position's trailing stop (was %s; cancelled %v): strategy B's 2 ETH trail no more",
		set, cancelIDs(cancel.Cancelled))
}

// migration00046 runs the Up section of migration 00046 (as the file
// holds it) again, on the rows the test made look like a database before
// it: its statements only touch rows that lack a strategy.
func migration00046(t *testing.T, b *adaptersBundle) {
	t.Helper()
	raw, err := os.ReadFile("../sql/migrations/00046_orders_strategy_everywhere.sql")
	require.NoError(t, err)
	up, _, found := strings.Cut(string(raw), "-- +goose Down")
	require.True(t, found)
	var lines []string
	for _, l := range strings.Split(up, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "-- +goose") {
			lines = append(lines, l)
		}
	}
	_, err = b.pool.Exec(context.Background(), strings.Join(lines, "\n"))
	require.NoError(t, err)
}
