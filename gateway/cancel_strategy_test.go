package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// venueStatus is the status the Binance fake holds for the spot order
// clientOrderID ("" when it holds none).
func venueStatus(b *adaptersBundle, clientOrderID string) string {
	for _, o := range b.binance.Orders() {
		if o.ClientOrderID == clientOrderID {
			return o.Status
		}
	}
	return ""
}

// twoStrategiesOnETH has strategy b buy 1 ETHUSDT on Binance spot with a
// stop-loss, then strategy a buy 1 with a take-profit and a stop-loss (an
// OCO list), each under its own strategy name as the README's spot ledger
// asks. It returns b's stop-loss and a's list.
func twoStrategiesOnETH(t *testing.T, b *adaptersBundle) (bStop, aList string) {
	t.Helper()
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	bBuy, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","strategy":"b","trace_id":"e2e-b-buy"}`))
	require.NoError(t, err)
	require.Len(t, bBuy.Legs, 1, "B's stop-loss rests")
	aBuy, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","strategy":"a","trace_id":"e2e-a-buy"}`))
	require.NoError(t, err)
	require.Len(t, aBuy.Legs, 1, "A's OCO list rests")
	return bBuy.Legs[0].ClientOrderID, aBuy.Legs[0].ClientOrderID
}

// Two strategies trade ETHUSDT on one Binance spot account. Strategy A
// exits early the way the README tells it to ("send cancel for the
// symbol first, then close"), both under its strategy name. A's cancel
// cancels A's OCO list only: B's stop-loss keeps resting (recorded open,
// NEW at Binance) and protects B's 1 ETH; A's close sells A's coin.
func TestOneStrategysCancelThenCloseLeavesAnotherStrategysStopLoss(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bStop, aList := twoStrategiesOnETH(t, b)

	cancel, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","strategy":"a","trace_id":"e2e-a-cancel"}`))
	require.NoError(t, err)
	closed, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"100%","strategy":"a","trace_id":"e2e-a-close"}`))
	require.NoError(t, err)
	require.Equal(t, "1", closed.Order.Quantity.String(), "A's close sold A's coin")

	for _, c := range cancel.Cancelled {
		require.NotEqualf(t, bStop, c.ClientOrderID,
			"strategy A's cancel cancelled strategy B's stop-loss %s (%s %s %s): B holds %s ETH with no stop-loss",
			c.ClientOrderID, c.Side, c.OrderType, c.Quantity, ledgerOf(t, b, "binance", "ETHUSDT", "b"))
	}
	require.Equal(t, []string{aList}, cancelIDs(cancel.Cancelled), "A's cancel cancels A's exits")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+bStop+`' AND status = 'open'`))
	require.Equal(t, "NEW", venueStatus(b, bStop), "B's stop-loss rests at Binance")
	require.Equal(t, "1", ledgerOf(t, b, "binance", "ETHUSDT", "b"))
}

// A cancel without a strategy is for the whole symbol, as before: it
// cancels every strategy's exits of the symbol. Sent right after a cancel
// naming a strategy, both without a trace_id (the window's key), it is a
// signal of its own (the strategy is part of the fingerprint), not a
// repeat of the first.
func TestCancelWithoutStrategyCancelsEveryStrategysOrdersOfTheSymbol(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bStop, aList := twoStrategiesOnETH(t, b)

	first, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","strategy":"a"}`))
	require.NoError(t, err)
	require.Equal(t, []string{aList}, cancelIDs(first.Cancelled))
	all, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel"}`))
	require.NoError(t, err, "not a repeat of the cancel naming a strategy")
	require.NotEqual(t, first.TraceID, all.TraceID)
	require.Equal(t, []string{bStop}, cancelIDs(all.Cancelled), "the rest of the symbol's orders: B's stop-loss")
	require.Equal(t, "CANCELED", venueStatus(b, bStop))

	// From the start, without a strategy: every strategy's.
	c := setupAdapters(t)
	cStop, cList := twoStrategiesOnETH(t, c)
	out, err := c.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"e2e-cancel-all"}`))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{cStop, cList}, cancelIDs(out.Cancelled))
}

// Strategy B's market buy filled at Binance, its stop-loss planned but not
// sent yet (its entry's fill recorded by the follow job, the sweeper not
// come yet). Strategy A's cancel leaves that exit to be placed; once a
// pass armed it, A's cancel leaves it to that pass too. Only a cancel
// naming B (or none) stops it.
func TestOneStrategysCancelLeavesAnotherStrategysUnsentExits(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.Zero)
	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","stop_loss":"2700","strategy":"b","trace_id":"un-b-buy"}`))
	require.NoError(t, err)
	require.Equal(t, "open", entry.Order.Status)
	id := entry.Order.ClientOrderID
	require.NoError(t, b.binance.FillOrder(id))
	// The follow job records the fill, which plans the stop-loss.
	ok, err := db.ApplyOrderUpdate(ctx, b.pool, id, db.OrderUpdate{Status: exchange.StatusFilled,
		FilledQuantity: decimal.NewFromInt(1), AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(2990)),
		FillPrice: decimal.NewNullDecimal(decimal.NewFromInt(2990))}, nil)
	require.NoError(t, err)
	require.True(t, ok)
	unsent := `SELECT count(*) FROM order_legs WHERE parent_client_order_id = '` + id + `' AND outcome IS NULL AND sent_at IS NULL`
	require.Equal(t, 1, count(t, b.pool, unsent), "B's stop-loss is planned, not sent")

	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","strategy":"a","trace_id":"un-a-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, unsent), "A's cancel left B's stop-loss to be placed")

	// A pass arms it (its send may reach Binance) and its answer is lost:
	// A's next cancel does not mark it either; B's own cancel does.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() WHERE parent_client_order_id = $1`, id)
	require.NoError(t, err)
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","strategy":"a","trace_id":"un-a-cancel-2"}`))
	require.NoError(t, err)
	marked := `SELECT count(*) FROM order_legs WHERE parent_client_order_id = '` + id + `' AND outcome IS NULL AND cancelled_by = `
	require.Equal(t, 0, count(t, b.pool, marked+`'k:un-a-cancel-2'`), "A's cancel left B's armed stop-loss to its pass")
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","strategy":"b","trace_id":"un-b-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, marked+`'k:un-b-cancel'`), "B's own cancel marks it: never sent again")
}
