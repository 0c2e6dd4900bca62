package jobs_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"
)

// Through hoox on paper (the default venue of hoox dev): a long of 1, a
// resting limit close of 1, then a market close of 1, which flattens the
// long and cancels the resting close first (as on Binance USDⓈ-M). A
// price crossing the cancelled close fills nothing; the follow job records
// it cancelled, and hoox's orders never show reduce-only closes that
// flipped the long to a short.
func TestPaperClosesNeverRecordedFilledPastTheLong(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	_, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"market","trace_id":"long"}`))
	require.NoError(t, err)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"1","price":"110","trace_id":"lclose"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := b.queuedFollow(t, "k:lclose")
	// A market close flattens the long, the resting close cancelled first
	// (as on Binance USDⓈ-M): it never fills after it.
	out, err = b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"1","order_type":"market","trace_id":"mclose"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", out.Order.Status)
	_, err = b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("111"))
	require.NoError(t, err)
	_, err = b.work(t, args)
	require.NoError(t, err)
	var status string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status FROM orders WHERE trace_id = 'k:lclose'`).Scan(&status))
	require.Equal(t, "cancelled", status, "the resting close is recorded cancelled, never filled")
	var net decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(sum(CASE side WHEN 'buy' THEN filled_quantity ELSE -filled_quantity END), 0)
		FROM orders WHERE symbol = 'BTCUSDT' AND status = 'filled'`).Scan(&net))
	require.False(t, net.IsNegative(), "reduce-only closes of a long of 1 recorded filled for %s more than the long", net.Neg())
	require.True(t, net.IsZero(), "the market close closed the long")
}

// Through hoox on paper: a long of 1, a resting limit close of 1, then a
// plain sell of 0.4 (not reduce-only: it may shrink the long under the
// close). When the price crosses the close it fills only the 0.6 left and
// the rest ends, as on Binance USDⓈ-M and Bybit linear: the follow job
// records the close cancelled with 0.6 filled, and what hoox's orders
// executed nets to flat, never short.
func TestPaperCloseCrossedAfterAPlainSellFillsOnlyWhatIsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	_, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"market","trace_id":"long"}`))
	require.NoError(t, err)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"1","price":"110","trace_id":"lclose"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := b.queuedFollow(t, "k:lclose")
	out, err = b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","quantity":"0.4","order_type":"market","trace_id":"plain"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", out.Order.Status)
	_, err = b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("111"))
	require.NoError(t, err)
	_, err = b.work(t, args)
	require.NoError(t, err)

	var status string
	var filled decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status, filled_quantity FROM orders WHERE trace_id = 'k:lclose'`).Scan(&status, &filled))
	require.Equal(t, "cancelled", status)
	require.True(t, decimal.RequireFromString("0.6").Equal(filled), "filled %s", filled)
	var net decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(sum(CASE side WHEN 'buy' THEN filled_quantity ELSE -filled_quantity END), 0)
		FROM orders WHERE symbol = 'BTCUSDT' AND status IN ('filled', 'cancelled', 'expired')`).Scan(&net))
	require.True(t, net.IsZero(), "what hoox's orders executed nets to %s, not flat", net)
}
