package migrations_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/sql/migrations"
)

// A resting limit entry placed before 00046 (intent settled 'dispatched',
// order still open) whose signal attached a stop-loss: its exits are
// planned only when it fills, by plan_order_legs_of, from the intent's
// order_spec Legs[].Order. 00046 fills the entry row's strategy but adds
// Strategy to the planned legs of unsettled intents only, so when the
// entry fills after the upgrade its stop-loss leg (and the exit row the
// leg runner records from it, db.NewOrderRow) carries no strategy, and
// every other strategy's cancel of the symbol takes it
// (gateway.cancelTakes: nil takes all).
func TestRestingEntryBeforeTheUpgradePlansItsExitsWithItsStrategy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 45)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol, action,
                              order_spec, signal, received_at, execution, outcome, settled_at) VALUES
  ('rest-b', 'k:a', 'k:a', 'f', 'live', 'client', 'binance-futures', 'ETHUSDT', 'long',
   '{"Side":"buy","Legs":[{"Role":"stop_loss","Order":{"ClientOrderID":"rest-b-1","Exit":"stop_loss"}}]}',
   '{"strategy":"b"}', now(), 0, 'dispatched', now());
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, mode, status, role) VALUES
  (gen_random_uuid(), 'k:a', 'rest-b', 'binance-futures', 'ETHUSDT', 'long', 'buy', 'limit', 1, 'live', 'open', 'primary')`)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))
	var entry string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT coalesce(strategy, 'NULL') FROM orders WHERE client_order_id = 'rest-b'`).Scan(&entry))
	require.Equal(t, "b", entry, "the migration fills the open entry's strategy")

	// The entry fills after the upgrade: its exits are planned now.
	_, err = db.ExecContext(ctx, `UPDATE orders SET status = 'filled', filled_quantity = 1 WHERE client_order_id = 'rest-b'`)
	require.NoError(t, err)
	var leg string
	require.NoError(t, db.QueryRowContext(ctx,
		`SELECT coalesce(order_spec->>'Strategy', 'NULL') FROM order_legs WHERE client_order_id = 'rest-b-1'`).Scan(&leg))
	require.Equal(t, "b", leg, "the stop-loss of strategy b's entry placed before the upgrade is planned without b's strategy: "+
		"its exit row is recorded NULL and any other strategy's cancel takes it")
}
