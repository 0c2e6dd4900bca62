package db_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// Path (review-admin, SetLedgerIf with "was": "0", as the README says for
// an entry not listed): the strategy holds nothing yet, so the entry has
// no row. The operator sets 1.5 naming was 0 (coins bought before hoox)
// while the strategy's first buy fill (0.3) is being recorded. The set's
// SELECT … FOR UPDATE finds no row to lock (the fill's insert is not
// committed), so 0 == was passes; its upsert then waits for the fill's
// row and overwrites it with 1.5. The set is not refused, the fill's 0.3
// is lost (the next close sells 1.5 of the 1.8 held), and the audit's
// "was" says 0. With the row present the same race IS refused (the lock
// waits and re-reads 0.3): "was" only holds for entries that exist.
func TestLedgerSetNamingZeroRacingTheFirstFillIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	k := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "dca"}

	// The fill, recorded in a transaction still open.
	fill, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer fill.Rollback(ctx) //nolint:errcheck
	id := uuid.Must(uuid.NewV7())
	coid := "hx" + strings.ReplaceAll(id.String(), "-", "")[:30]
	_, err = fill.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side,
		order_type, quantity, mode, status, filled_quantity, strategy, base_asset)
		VALUES ($1, 'k:'||$2, $2, 'binance', 'BTCUSDT', 'buy', 'buy', 'market', 0.3, 'live', 'filled', 0.3, 'dca', 'BTC')`, id, coid)
	require.NoError(t, err)

	zero := decimal.Zero
	type result struct {
		e   db.LedgerEntry
		err error
	}
	done := make(chan result, 1)
	go func() {
		e, err := db.SetLedgerIf(ctx, pool, k, &zero, decimal.RequireFromString("1.5"), "bought by hand before hoox", "admin")
		done <- result{e, err}
	}()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n))
		return n > 0
	}, 30*time.Second, 10*time.Millisecond, "the set waits for the fill's row")
	require.NoError(t, fill.Commit(ctx))
	r := <-done

	var changed *db.LedgerChangedError
	require.True(t, errors.As(r.err, &changed),
		"the fill moved the entry from the 0 named to 0.3 before the set took effect: it must be refused, not overwrite the fill (got err %v, entry now %s)",
		r.err, ledger(t, pool, "dca"))
}
