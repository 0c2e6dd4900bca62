package migrations_test

import (
	"context"
	stdsql "database/sql"
	"sync"
	"testing"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/sql/migrations"
)

func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }

func tableExists(t *testing.T, ctx context.Context, url, table string) bool {
	t.Helper()
	db, err := migrations.Open(url)
	require.NoError(t, err)
	defer db.Close()
	var ok bool
	require.NoError(t, db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
	return ok
}

// hooxTables are the tables the migrations create, River's included.
var hooxTables = []string{"trace_ids", "orders", "trace_events", "settings", "paper_orders", "river_job"}

// freshDatabase returns a migrated database, a handle on it and a goose
// provider over it, all closed when the test ends.
func freshDatabase(t *testing.T) (string, *stdsql.DB, *goose.Provider) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	db, err := migrations.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	p, err := migrations.NewProvider(db)
	require.NoError(t, err)
	return url, db, p
}

func TestUpDownToZeroAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db, p := freshDatabase(t)

	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.True(t, current, "the harness database is fully migrated")

	_, err = p.DownTo(ctx, 0)
	require.NoError(t, err)
	for _, table := range hooxTables {
		require.False(t, tableExists(t, ctx, url, table), "%s survives down to zero", table)
	}
	current, err = migrations.Current(ctx, db)
	require.NoError(t, err)
	require.False(t, current)

	require.NoError(t, migrations.Up(ctx, db))
	for _, table := range hooxTables {
		require.True(t, tableExists(t, ctx, url, table), "%s is back after up", table)
	}
	latest, err := migrations.LatestVersion()
	require.NoError(t, err)
	v, err := p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, latest, v)
}

// Replicas starting together all migrate; the session lock makes them take
// turns instead of failing on each other's half-made tables.
func TestConcurrentMigrationsTakeTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 0)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := migrations.Open(url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = migrations.Up(ctx, db)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.True(t, current)
}

// Migration 29 moves the purged events into trace_purges; through
// trace_history, and after the down migration through trace_events, the
// audit trail reads exactly as before, ids and details included.
func TestPurgedEventsMoveToTracePurgesAndReadTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 28)
	require.NoError(t, err)

	_, err = db.ExecContext(ctx, `
INSERT INTO trace_events (trace_id, event, at, source_ip, detail) VALUES
  ('d:one', 'received', now() - interval '25 hours', '10.0.0.1', '{"key_source": "derived"}'),
  ('d:one', 'purged', now() - interval '1 hour', NULL,
   jsonb_build_object('status', 'dispatched', 'order_id', '0b7e5a6c-7f43-4a39-9a41-3c7a1e0c2f55'::uuid,
                      'received_at', now() - interval '25 hours', 'expires_at', now() - interval '1 hour')),
  ('k:two', 'purged', now() - interval '2 hours', NULL,
   jsonb_build_object('status', 'rejected', 'order_id', NULL::uuid,
                      'received_at', now() - interval '26 hours', 'expires_at', now() - interval '2 hours')),
  ('k:odd', 'purged', now() - interval '3 hours', NULL, '{"note": "written by hand"}')`)
	require.NoError(t, err)

	const cols = `id, trace_id, event, at::text, coalesce(host(source_ip), ''), detail::text`
	read := func(from string) [][]string {
		t.Helper()
		rows, err := db.QueryContext(ctx, "SELECT "+cols+" FROM "+from+" ORDER BY id")
		require.NoError(t, err)
		defer rows.Close()
		var out [][]string
		for rows.Next() {
			r := make([]string, 6)
			require.NoError(t, rows.Scan(&r[0], &r[1], &r[2], &r[3], &r[4], &r[5]))
			out = append(out, r)
		}
		require.NoError(t, rows.Err())
		return out
	}
	count := func(query string) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRowContext(ctx, query).Scan(&n))
		return n
	}
	before := read("trace_events")
	require.Len(t, before, 4)

	_, err = p.UpTo(ctx, 29)
	require.NoError(t, err)
	require.Equal(t, before, read("trace_history"), "the audit trail reads the same through the view")
	require.Equal(t, 2, count(`SELECT count(*) FROM trace_purges`), "the purged events hoox wrote moved")
	require.Equal(t, 2, count(`SELECT count(*) FROM trace_events`), "the received event and the hand-written purged one stay")

	// New events continue the shared id sequence.
	_, err = db.ExecContext(ctx, `INSERT INTO trace_purges (trace_id, status, received_at, expires_at) VALUES ('k:three', 'dispatched', now() - interval '1 day', now())`)
	require.NoError(t, err)
	after := read("trace_history")
	require.Len(t, after, 5)
	require.Equal(t, "k:three", after[4][1])

	_, err = p.DownTo(ctx, 28)
	require.NoError(t, err)
	require.Equal(t, after, read("trace_events"), "down again, trace_events holds the same trail")
}

// Sessions opened on hoox's database after migration 00031, and
// autovacuum's workers there, hand their writes to the kernel every
// 256 kB; down to 00030 puts the server's setting back.
func TestSessionsWriteBackAsTheyGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db, p := freshDatabase(t)
	setting := func() string {
		t.Helper()
		session, err := migrations.Open(url)
		require.NoError(t, err)
		defer session.Close()
		var v string
		require.NoError(t, session.QueryRowContext(ctx, "SHOW backend_flush_after").Scan(&v))
		return v
	}
	_, err := p.DownTo(ctx, 30)
	require.NoError(t, err)
	require.Equal(t, "0", setting(), "the server's default")
	require.NoError(t, migrations.Up(ctx, db))
	require.Equal(t, "256kB", setting())
}

// Migration 00048: autovacuum visits the audit tables at about a fifth of
// its pace (their own cost delay) and trace_ids at the server's; down to
// 00047 gives the audit tables the server's pace again.
func TestAutovacuumVisitsTheAuditTablesGently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	delay := func(table string) string {
		t.Helper()
		var v stdsql.NullString
		require.NoError(t, db.QueryRowContext(ctx, `SELECT (SELECT option_value FROM pg_class c,
			LATERAL pg_options_to_table(c.reloptions) WHERE c.relname = $1 AND option_name = 'autovacuum_vacuum_cost_delay')`,
			table).Scan(&v))
		return v.String
	}
	require.Equal(t, "10", delay("trace_events"))
	require.Equal(t, "10", delay("trace_purges"))
	require.Empty(t, delay("trace_ids"), "the dedup table keeps the server's pace")

	_, err := p.DownTo(ctx, 47)
	require.NoError(t, err)
	require.Empty(t, delay("trace_events"))
	require.Empty(t, delay("trace_purges"))
}

// TestAnalyzeSkipsPayload: migration 00032. ANALYZE keeps no statistics
// for the payload columns (the signal as sent, its source IP) and still
// keeps them for the columns queries filter on; the down migration
// samples the payload again.
func TestAnalyzeSkipsPayload(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := db.ExecContext(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, source_ip, expires_at)
SELECT 'k:' || n, md5(n::text), 'live', 'client', 'dispatched', 'paper', 'BTCUSDT', 'buy',
       jsonb_build_object('n', n), '127.0.0.1', now() + interval '1 day'
FROM generate_series(1, 200) n`)
	require.NoError(t, err)
	analysed := func(column string) bool {
		t.Helper()
		_, err := db.ExecContext(ctx, "ANALYZE trace_ids")
		require.NoError(t, err)
		var n int
		require.NoError(t, db.QueryRowContext(ctx,
			"SELECT count(*) FROM pg_stats WHERE tablename = 'trace_ids' AND attname = $1", column).Scan(&n))
		return n > 0
	}
	require.True(t, analysed("status"))
	require.True(t, analysed("expires_at"))
	require.False(t, analysed("signal"), "the signal as sent is not sampled")
	require.False(t, analysed("source_ip"))

	_, err = p.DownTo(ctx, 31)
	require.NoError(t, err)
	require.True(t, analysed("signal"), "after the down migration the signal is sampled again")
}

// Migration 00036: down, a paper order cut to the position when it filled
// (cancelled, with filled_quantity) becomes a fill of what it executed, so
// the position the book adds up the old way (filled orders' quantities)
// stays what executed; one that executed nothing stays cancelled.
func TestPaperCutOrdersKeepTheirFillDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := db.ExecContext(ctx, `
INSERT INTO paper_orders (client_order_id, exchange_order_id, symbol, side, order_type, quantity, price, fill_price, status, test, reduce_only, filled_quantity) VALUES
  ('long', 'paper-1', 'BTCUSDT', 'buy', 'market', 1, NULL, 100, 'filled', false, false, NULL),
  ('cut', 'paper-2', 'BTCUSDT', 'sell', 'limit', 1, 110, 110, 'cancelled', false, true, 0.6),
  ('none', 'paper-3', 'BTCUSDT', 'sell', 'limit', 1, 120, NULL, 'cancelled', false, true, 0)`)
	require.NoError(t, err)

	_, err = p.DownTo(ctx, 35)
	require.NoError(t, err)
	var pos, cancelled string
	require.NoError(t, db.QueryRowContext(ctx, `
SELECT trim_scale(sum(CASE side WHEN 'buy' THEN quantity ELSE -quantity END) FILTER (WHERE status = 'filled'))::text,
       string_agg(client_order_id, ',') FILTER (WHERE status = 'cancelled')
FROM paper_orders`).Scan(&pos, &cancelled))
	require.Equal(t, "0.4", pos, "the long less what the cut close executed")
	require.Equal(t, "none", cancelled)
}

// Migration 00041: an unknown (failed) or reconciling intent that a
// window-mode resend settled under its own trace, while the intent still
// named the dead first arrival's trace (which never committed), is
// pointed at the resend's trace; one whose own trace exists, and one
// whose trace an operator released by force, keep theirs.
func TestIntentsNameTheTraceThatSettledThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 40)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id, signal, expires_at) VALUES
  ('w:resend', 'f', 'live', 'window', 'failed', 'binance-spot', 'BTCUSDT', 'buy', 'missed', '{}', now() + interval '1 day'),
  ('w:resend2', 'f', 'live', 'window', 'reconciling', 'binance-spot', 'BTCUSDT', 'buy', 'reconciling', '{}', now() + interval '1 day'),
  ('k:own', 'f', 'live', 'client', 'failed', 'binance-spot', 'BTCUSDT', 'buy', 'own', '{}', now() + interval '1 day'),
  ('k:other', 'f', 'live', 'client', 'failed', 'binance-spot', 'BTCUSDT', 'buy', 'own', '{}', now() + interval '1 day');
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol, action,
                              order_spec, signal, received_at, execution, outcome, settled_at) VALUES
  ('missed', 'w:f', 'w:first', 'f', 'live', 'window', 'binance-spot', 'BTCUSDT', 'buy', '{}', '{}', now(), 0, 'failed', now()),
  ('reconciling', 'w:f', 'w:first2', 'f', 'live', 'window', 'binance-spot', 'BTCUSDT', 'buy', '{}', '{}', now(), 1, 'reconciling', now()),
  ('own', 'k:own', 'k:own', 'f', 'live', 'client', 'binance-spot', 'BTCUSDT', 'buy', '{}', '{}', now(), 0, 'failed', now()),
  ('released', 'k:gone', 'k:gone', 'f', 'live', 'client', 'binance-spot', 'BTCUSDT', 'buy', '{}', '{}', now(), 0, 'failed', now())`)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))
	rows, err := db.QueryContext(ctx, `SELECT client_order_id, trace_id FROM dispatch_intents ORDER BY client_order_id`)
	require.NoError(t, err)
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var id, trace string
		require.NoError(t, rows.Scan(&id, &trace))
		got[id] = trace
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"missed": "w:resend", "reconciling": "w:resend2", "own": "k:own", "released": "k:gone"}, got)
}

// A rollback of the binary one release back runs on a schema one or more
// migrations ahead of it (docs/DEPLOY.md, "Rolling back a release"): its
// readiness check must take that schema as current, or the rolled-back
// replicas would never become ready.
func TestASchemaAheadOfTheBinaryIsCurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, _ := freshDatabase(t)

	latest, err := migrations.LatestVersion()
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, true)", latest+1)
	require.NoError(t, err)

	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.True(t, current, "a schema one migration ahead of the binary reads as behind it")
}

// The failed spot sells settled before 00043 keep the rule they were
// settled under (not counted as sold in their strategy's spot ledger, which
// operators corrected by hand): marked released by the migration, so a
// strategy's closes are not short by them from the upgrade on. Other
// failed intents are left unmarked.
func TestFailedSpotSellsBeforeTheUpgradeStayReleased(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 42)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol, action,
                              order_spec, signal, received_at, execution, outcome, settled_at) VALUES
  ('spot-sell', 'k:a', 'k:a', 'f', 'live', 'client', 'binance', 'BTCUSDT', 'close',
   '{"Side":"sell","Quantity":"1","Ledger":{"strategy":"s","symbol":"BTCUSDT","base_asset":"BTC"}}', '{}', now(), 0, 'failed', now()),
  ('spot-buy', 'k:b', 'k:b', 'f', 'live', 'client', 'binance', 'BTCUSDT', 'buy',
   '{"Side":"buy","Quantity":"1","Ledger":{"strategy":"s","symbol":"BTCUSDT","base_asset":"BTC"}}', '{}', now(), 0, 'failed', now()),
  ('futures-sell', 'k:c', 'k:c', 'f', 'live', 'client', 'binance-futures', 'BTCUSDT', 'sell',
   '{"Side":"sell","Quantity":"1","Ledger":null}', '{}', now(), 0, 'failed', now()),
  ('open-sell', 'k:d', 'k:d', 'f', 'live', 'client', 'binance', 'BTCUSDT', 'close',
   '{"Side":"sell","Quantity":"1","Ledger":{"strategy":"s","symbol":"BTCUSDT","base_asset":"BTC"}}', '{}', now(), 0, NULL, NULL)`)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))
	rows, err := db.QueryContext(ctx, `SELECT client_order_id FROM dispatch_intents WHERE ledger_released_by IS NOT NULL`)
	require.NoError(t, err)
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		got = append(got, id)
	}
	require.NoError(t, rows.Err())
	require.Equal(t, []string{"spot-sell"}, got)
}

// Orders placed before 00046 carry no strategy off spot. The migration
// fills in their signal's strategy where a cancel may still take them
// (an open order, the entry of an exit still to settle, an intent or leg
// not settled yet — its planned exits too), so a cancel naming a
// strategy leaves another strategy's; a row whose signal holds no
// strategy stays NULL (every cancel of its symbol takes it, as before).
func TestOrdersBeforeTheUpgradeGetTheirSignalsStrategy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 44)
	require.NoError(t, err)
	_, err = db.ExecContext(ctx, `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol, action,
                              order_spec, signal, received_at, execution, outcome, settled_at) VALUES
  ('open-b', 'k:a', 'k:a', 'f', 'live', 'client', 'bybit', 'ETHUSDT', 'long', '{"Side":"buy"}', '{"strategy":"b"}', now(), 0, 'dispatched', now()),
  ('filled-b', 'k:b', 'k:b', 'f', 'live', 'client', 'bybit', 'ETHUSDT', 'long', '{"Side":"buy"}', '{"strategy":"b"}', now(), 0, 'dispatched', now()),
  ('done-b', 'k:c', 'k:c', 'f', 'live', 'client', 'bybit', 'ETHUSDT', 'long', '{"Side":"buy"}', '{"strategy":"b"}', now(), 0, 'dispatched', now()),
  ('open-none', 'k:d', 'k:d', 'f', 'live', 'client', 'bybit', 'ETHUSDT', 'long', '{"Side":"buy"}', '{"strategy":""}', now(), 0, 'dispatched', now()),
  ('open-unknown', 'k:e', 'k:e', 'f', 'live', 'client', 'bybit', 'ETHUSDT', 'long', '{"Side":"buy"}', '{}', now(), 0, 'dispatched', now()),
  ('unsent-a', 'k:f', 'k:f', 'f', 'live', 'client', 'binance-futures', 'ETHUSDT', 'long',
   '{"Side":"buy","Legs":[{"Role":"stop_loss","Order":{"ClientOrderID":"unsent-a-1","Exit":"stop_loss"}}]}', '{"strategy":"a"}', now(), 0, NULL, NULL);
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, mode, status, role) VALUES
  (gen_random_uuid(), 'k:a', 'open-b', 'bybit', 'ETHUSDT', 'long', 'buy', 'limit', 1, 'live', 'open', 'primary'),
  (gen_random_uuid(), 'k:b', 'filled-b', 'bybit', 'ETHUSDT', 'long', 'buy', 'market', 1, 'live', 'filled', 'primary'),
  (gen_random_uuid(), 'k:b', 'filled-b-1', 'bybit', 'ETHUSDT', 'close', 'sell', 'market', 1, 'live', 'open', 'stop_loss'),
  (gen_random_uuid(), 'k:c', 'done-b', 'bybit', 'ETHUSDT', 'long', 'buy', 'market', 1, 'live', 'filled', 'primary'),
  (gen_random_uuid(), 'k:d', 'open-none', 'bybit', 'ETHUSDT', 'long', 'buy', 'limit', 1, 'live', 'open', 'primary'),
  (gen_random_uuid(), 'k:e', 'open-unknown', 'bybit', 'ETHUSDT', 'long', 'buy', 'limit', 1, 'live', 'open', 'primary');
INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key, exchange, mode, order_spec, sent_at, outcome) VALUES
  ('filled-b-1', 'filled-b', 1, 'stop_loss', 'k:b', 'k:b', 'bybit', 'live', '{"ClientOrderID":"filled-b-1"}', now(), 'dispatched'),
  ('filled-b-2', 'filled-b', 2, 'take_profit', 'k:b', 'k:b', 'bybit', 'live', '{"ClientOrderID":"filled-b-2"}', now(), NULL)`)
	require.NoError(t, err)

	require.NoError(t, migrations.Up(ctx, db))
	strategies := map[string]string{}
	rows, err := db.QueryContext(ctx, `SELECT client_order_id, coalesce(strategy, 'NULL') FROM orders`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id, s string
		require.NoError(t, rows.Scan(&id, &s))
		strategies[id] = s
	}
	require.NoError(t, rows.Err())
	require.Equal(t, map[string]string{"open-b": "b", "filled-b": "b", "filled-b-1": "b", "done-b": "NULL",
		"open-none": "", "open-unknown": "NULL"}, strategies)

	var spec, leg string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT order_spec->>'Strategy' || ' ' || (order_spec->'Legs'->0->'Order'->>'Strategy')
		FROM dispatch_intents WHERE client_order_id = 'unsent-a'`).Scan(&spec))
	require.Equal(t, "a a", spec, "an unsettled intent and its planned exits record the strategy when they are recorded")
	require.NoError(t, db.QueryRowContext(ctx, `SELECT coalesce(order_spec->>'Strategy', 'NULL') FROM order_legs WHERE client_order_id = 'filled-b-2'`).Scan(&leg))
	require.Equal(t, "b", leg)
}
