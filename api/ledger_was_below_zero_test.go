package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Path (review-admin, PUT /admin/ledger with "was"): a strategy's sale
// was recorded before its open buy's fill, so its entry is stored below
// zero (-1, migration 00034) and GET /admin/ledger shows it clamped:
// "0". The operator sets the entry naming "was": "0", as GET showed it
// and as the README tells. SetLedgerIf compares the unclamped -1: 409
// ledger_changed "holds -1 now … set it naming -1" although nothing moved
// since the listing; and naming "-1" is a 400 (was must not be
// negative). A set naming what GET shows can never succeed.
func TestLedgerSetNamingTheListedValueOfAnEntryBelowZero(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupAdmin(t)
	for _, o := range []struct{ side, status, filled string }{{"buy", "open", "0"}, {"sell", "filled", "1"}} {
		_, err := b.pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side,
			order_type, quantity, mode, status, filled_quantity, strategy, base_asset)
			VALUES (gen_random_uuid(), 'k:'||$1, 'hx'||$1, 'binance', 'BTCUSDT', $1, $1, 'limit', 1, 'live', $2, $3::numeric, 'dca', 'BTC')`,
			o.side, o.status, o.filled)
		require.NoError(t, err)
	}
	entries := b.do(t, http.MethodGet, "/admin/ledger?strategy=dca", "").json(t)["entries"].([]any)
	require.Len(t, entries, 1)
	listed := entries[0].(map[string]any)["quantity"].(string)
	require.Equal(t, "0", listed)

	const key = `"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "dca"`
	res := b.do(t, http.MethodPut, "/admin/ledger", `{`+key+`, "quantity": "0", "was": "`+listed+`", "reason": "checked at the venue"}`)
	require.Equal(t, http.StatusOK, res.Status, "nothing moved since GET showed %s: %s", listed, res.Body)
}
