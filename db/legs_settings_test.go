package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
)

// A position's setting lock (a Bybit trailing stop) is one per account,
// mode and instrument, however the signal spells the symbol: a cancel
// holding it keeps a pass from setting that position's trailing stop, and
// nothing else.
func TestPositionSettingLockIsOnePerPosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	held, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Rollback(ctx) })
	require.NoError(t, db.LockPositionSetting(ctx, held, "bybit", "live", "BYBIT:BTCUSDT.P"))

	try := func(exchangeName, mode, symbol string) error {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		_, err = tx.Exec(ctx, `SET LOCAL lock_timeout = '50ms'`)
		require.NoError(t, err)
		return db.LockPositionSetting(ctx, tx, exchangeName, mode, symbol)
	}
	require.ErrorIs(t, try("bybit", "live", "BTCUSDT"), db.ErrLockTimeout, "the same position, spelled as the venue does")
	require.NoError(t, try("bybit", "test", "BTCUSDT"), "the testnet account's position is another")
	require.NoError(t, try("bybit", "live", "ETHUSDT"))
	require.NoError(t, try("bybit-2", "live", "BTCUSDT"), "another account")
}

// The close of a leg's position is found by its symbol in SQL: the key
// Postgres computes is exchange.SymbolKey's, for every spelling of an
// instrument a signal or a venue gives (so a close sent as
// BYBIT:BTCUSDT.P is found for a leg of BTCUSDT, and no ETHUSDT close is).
func TestSymbolKeyInSQLIsSymbolKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, s := range []string{"BTCUSDT", "btcusdt", "BYBIT:BTCUSDT.P", "BINANCE:BTCUSDT.P", "btc/usdt", "BTC-USDT",
		"BTC_USDT", "BTC-USDT-SWAP", "OKX:BTC-USDT-SWAP", "okx:btc-usdt-swap.p", "A:B:ETHUSDT", "ETHUSDT.P.P", "1000PEPEUSDT",
		"SWAP", "XSWAPUSDT", "BTCUSDT.PERP", "ETH.P", ".P", "BTC:", "  BTCUSDT  "} {
		var key string
		require.NoError(t, pool.QueryRow(ctx, `SELECT `+db.SymbolKeySQL("$1::text"), s).Scan(&key))
		require.Equal(t, exchange.SymbolKey(s), key, "the key of %q", s)
	}
}
