package paper_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/sql/migrations"
)

// A limit close a release before paper_orders.reduce_only (schema 00034)
// left resting in the paper book is still a close after the upgrade
// (00040 marks it): read as a plain sell, a close of the whole position
// placed after the upgrade neither cancelled nor counted it, and when the
// price crossed it, it sold a long that was no longer there and left the
// paper book short.
func TestRestingCloseFromBeforeReduceOnlyStaysReducingAfterTheUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	sqldb, err := migrations.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { sqldb.Close() })
	p, err := migrations.NewProvider(sqldb)
	require.NoError(t, err)

	// The schema of the release before 00035.
	_, err = p.DownTo(ctx, 34)
	require.NoError(t, err)

	// What that release wrote for a market buy of 1 and a limit close of
	// it resting at 110: its paper venue's insert (exchange/paper/paper.go
	// at 1a2a491, insertOrderSQL, verbatim), and the gateway's order row.
	const oldInsert = `
INSERT INTO paper_orders (client_order_id, exchange_order_id, symbol, side, order_type,
                          quantity, price, fill_price, status, test, take_profit, stop_loss)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
ON CONFLICT (client_order_id) DO NOTHING
RETURNING exchange_order_id`
	var id string
	require.NoError(t, sqldb.QueryRowContext(ctx, oldInsert, "o1", "paper-o1", "BTCUSDT", "buy", "market",
		"1", nil, "100", "filled", false, nil, nil).Scan(&id))
	require.NoError(t, sqldb.QueryRowContext(ctx, oldInsert, "c1", "paper-c1", "BTCUSDT", "sell", "limit",
		"1", "110", nil, "open", false, nil, nil).Scan(&id))
	_, err = sqldb.ExecContext(ctx, `
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price, mode, status, exchange_order_id, fill_price)
VALUES (gen_random_uuid(), 't-o1', 'o1', 'paper', 'BTCUSDT', 'buy', 'buy', 'market', 1, NULL, 'live', 'filled', 'paper-o1', 100),
       (gen_random_uuid(), 't-c1', 'c1', 'paper', 'BTCUSDT', 'close', 'sell', 'limit', 1, 110, 'live', 'open', 'paper-c1', NULL)`)
	require.NoError(t, err)

	// The upgrade.
	require.NoError(t, migrations.Up(ctx, sqldb))

	// This release: the strategy closes its whole long at market.
	venue := paper.New(paper.Config{Pool: pgtest.OpenPool(t, url)})
	r, err := venue.Place(ctx, closeOrder("c2", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)

	// A price crossing the close that rested across the upgrade.
	_, err = venue.SetPrice(ctx, "BTCUSDT", false, dec("110"))
	require.NoError(t, err)

	orders, err := venue.Orders(ctx)
	require.NoError(t, err)
	pos := decimal.Zero
	for _, o := range orders {
		executed := o.FilledQuantity
		if o.Side == "buy" {
			pos = pos.Add(executed)
		} else {
			pos = pos.Sub(executed)
		}
	}
	require.False(t, pos.IsNegative(),
		"two closes of a long of 1 (one resting since before the upgrade) left the paper book short %s", pos.Neg())
}

// 00040 does not take an empty order spec for a close: orders placed
// before dispatch_intents existed (schema 00004) were backfilled with
// order_spec '{}', and a plain limit buy resting in the paper book since
// then, marked reduce-only, could never fill on a flat book (reduce-only
// fills never open): the strategy's entry silently lost.
func TestRestingPaperBuyFromBeforeIntentsIsNotMadeReduceOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	sqldb, err := migrations.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { sqldb.Close() })
	p, err := migrations.NewProvider(sqldb)
	require.NoError(t, err)

	// The schema before dispatch_intents (00004).
	_, err = p.DownTo(ctx, 3)
	require.NoError(t, err)
	_, err = sqldb.ExecContext(ctx, `
INSERT INTO paper_orders (client_order_id, exchange_order_id, symbol, side, order_type, quantity, price, status, test)
VALUES ('b1', 'paper-b1', 'BTCUSDT', 'buy', 'limit', 1, 90, 'open', false)`)
	require.NoError(t, err)
	_, err = sqldb.ExecContext(ctx, `
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price, mode, status, exchange_order_id)
VALUES (gen_random_uuid(), 'k:entry', 'b1', 'paper', 'BTCUSDT', 'buy', 'buy', 'limit', 1, 90, 'live', 'open', 'paper-b1')`)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, sqldb))

	var reduceOnly bool
	require.NoError(t, sqldb.QueryRowContext(ctx, `SELECT reduce_only FROM paper_orders WHERE client_order_id = 'b1'`).Scan(&reduceOnly))

	venue := paper.New(paper.Config{Pool: pgtest.OpenPool(t, url)})
	_, err = venue.SetPrice(ctx, "BTCUSDT", false, dec("89"))
	require.NoError(t, err)
	orders, err := venue.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, orders, 1)
	require.False(t, reduceOnly, "the upgrade marked a resting limit BUY (an entry) reduce-only")
	require.True(t, orders[0].FilledQuantity.Equal(dec("1")),
		"the resting limit buy at 90 did not fill at 89 after the upgrade: status %s, filled %s", orders[0].Status, orders[0].FilledQuantity)
}
