package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
)

// SymbolKeySQL claims to be exchange.SymbolKey exactly for every symbol of
// the charset A-Za-z0-9._:/- (its doc comment). Its btrim set is written
// E' \t\n\r\v\f', but Postgres's escape strings know no \v ("any other
// character following a backslash is taken literally"): the set holds a
// lowercase 'v', which btrim strips from both ends before upper runs. So
// "vetusdt" (VET is a listed coin) keys as ETUSDT in SQL and VETUSDT in Go.
func TestSymbolKeyInSQLKeepsALowercaseVAtEitherEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, s := range []string{"vetusdt", "bybit:vetusdt.p", "btc-usdtv", "vET"} {
		var key string
		require.NoError(t, pool.QueryRow(ctx, `SELECT `+db.SymbolKeySQL("$1::text"), s).Scan(&key))
		require.Equal(t, exchange.SymbolKey(s), key, "the key of %q", s)
	}
}
