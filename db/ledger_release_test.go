package db_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// A spot sell that ended failed with its order unknown — a close's intent
// (with the parts it planned) or a close part — counts as sold in its
// entry until an operator sets the entry: the set releases exactly those
// of the entry (listed in its answer and audit, each with an event on its
// own trace), never a sell still in flight, a failed exit, nor another
// strategy's; a close part released is marked so the leg runner never
// sends it again.
func TestLedgerSetReleasesOnlyTheEntrysFailedSells(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	sell := func(strategy, qty string) string {
		return `{"Side":"sell","Quantity":"` + qty + `","Ledger":{"strategy":"` + strategy + `","symbol":"BTCUSDT","base_asset":"BTC"}}`
	}
	for _, in := range []struct {
		id, strategy, qty string
		outcome           any
	}{{"hxfailed", "trend", "1", "failed"}, {"hxopen", "trend", "2", nil}, {"hxother", "other", "4", "failed"}} {
		_, err := pool.Exec(ctx, `INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source,
			exchange, symbol, action, order_spec, signal, received_at, execution, outcome)
			VALUES ($1, 'k:'||$1, 'k:'||$1, 'f', 'live', 'client', 'binance', 'BTCUSDT', 'close',
			        jsonb_set($2::jsonb, '{Legs}', jsonb_build_array(jsonb_build_object('Role', 'close_part', 'Order', $3::jsonb))),
			        '{}', now(), 1, $4)`, in.id, sell(in.strategy, in.qty), sell(in.strategy, "0.5"), in.outcome)
		require.NoError(t, err)
	}
	for i, l := range []struct {
		id, role, qty string
		outcome       any
	}{{"hxpartfailed", "close_part", "8", "failed"}, {"hxpartopen", "close_part", "16", nil}, {"hxstopfailed", "stop_loss", "32", "failed"}} {
		_, err := pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
			exchange, mode, order_spec, outcome) VALUES ($1, 'hxdone', $2, $3, 'k:done', 'k:done', 'binance', 'live', $4, $5)`,
			l.id, i+1, l.role, sell("trend", l.qty), l.outcome)
		require.NoError(t, err)
	}
	key := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"}
	unrecorded := func() string {
		held, err := db.LockLedger(ctx, pool, key)
		require.NoError(t, err)
		return held.Unrecorded.String()
	}
	require.Equal(t, "28", unrecorded(), "1.5 failed and 2.5 open intents, 8 failed and 16 open parts; not the failed stop-loss")

	e, err := db.SetLedger(ctx, pool, key, decimal.RequireFromString("3"), "checked at binance", "ops")
	require.NoError(t, err)
	require.Equal(t, []db.ReleasedSell{
		{TraceID: "k:done", ClientOrderID: "hxpartfailed", Role: "close_part", Quantity: "8"},
		{TraceID: "k:hxfailed", ClientOrderID: "hxfailed", Role: "primary", Quantity: "1.5"},
	}, e.Released)
	require.Equal(t, "18.5", unrecorded(), "what is in flight stays reserved")
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM order_legs WHERE client_order_id = 'hxpartfailed' AND cancelled_by = 'admin:ledger'`))
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:hxfailed' AND event = 'ledger_released'`))
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:done' AND event = 'ledger_released'`))
	require.Equal(t, 2, countRows(t, pool, `SELECT jsonb_array_length(detail->'released_sells') FROM trace_history
		WHERE trace_id = 'admin:ledger' AND event = 'ledger_set'`))

	e, err = db.SetLedger(ctx, pool, key, decimal.RequireFromString("3"), "again", "ops")
	require.NoError(t, err)
	require.Empty(t, e.Released, "released once")
	held, err := db.LockLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "other"})
	require.NoError(t, err)
	require.Equal(t, "4.5", held.Unrecorded.String(), "another strategy's failed sell stays reserved")
}
