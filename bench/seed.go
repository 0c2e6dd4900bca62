package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// seedTables are the tables a new paper signal writes, in the order the
// seed copies them. Their keys are what the copies must change to stay
// unique (seedKeyColumns, seedUUIDColumns); everything else is copied as
// hoox wrote it.
var seedTables = []string{"trace_ids", "trace_events", "dispatch_intents", "orders", "paper_orders"}

// seedKeyColumns are the text keys a copy suffixes with its number: the
// primary keys and unique columns of seedTables, and the columns that
// refer to them across tables (so a copied trace, its events, intent,
// order and fill still name each other).
var seedKeyColumns = map[string]bool{
	"trace_id": true, "client_order_id": true, "lock_key": true, "exchange_order_id": true,
}

// seedUUIDColumns are the uuid keys a copy derives anew, the same way in
// every table (orders.id and trace_ids.order_id stay equal).
var seedUUIDColumns = map[string]bool{"id": true, "order_id": true}

// SeedLive gives the database at url the day of live history a running
// gateway has: about n settled signals in all five tables a signal
// writes, received over the last 23 hours, vacuumed and analysed as
// autovacuum leaves them, and as many rows in each of the reference
// script's tables (ReferenceSchema), so neither side of a comparison
// starts on empty tables. The rows are copies of the signals of a short
// closed-loop run of the hoox at hooxURL (its own rows, so their shape is
// exactly what hoox writes): each copy suffixes the keys with its number
// and moves every timestamp back by its share of the day. Triggers do
// not fire for the copies (session_replication_role = replica): they are
// rows as they stand after their triggers ran. The connection must be a
// superuser's.
//
// Why: on empty tables, autovacuum's thresholds (50 rows + 10 % of the
// table for ANALYZE, 1,000 + 20 % for an insert vacuum) are reached every
// few seconds at a thousand signals a second, so the benchmark measured
// a young database's autovacuum rounds, not a server's
// (docs/BENCHMARKS.md, "Issue 21, fourteenth round").
func SeedLive(ctx context.Context, hooxURL, secret, url string, n int) (time.Duration, error) {
	began := time.Now()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var before int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trace_ids").Scan(&before); err != nil {
		return 0, err
	}
	if before > 0 {
		return 0, fmt.Errorf("seed: the database already holds %d traces", before)
	}
	if _, err := Run(ctx, LoadConfig{URL: hooxURL, Secret: secret, Workers: 8, Duration: 2 * time.Second}); err != nil {
		return 0, fmt.Errorf("seed: warm-up run: %w", err)
	}
	var made int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM trace_ids").Scan(&made); err != nil {
		return 0, err
	}
	if made == 0 {
		return 0, fmt.Errorf("seed: the warm-up run placed nothing")
	}
	copies := max((n+made-1)/made-1, 0)
	if copies > 0 {
		if err := copyRows(ctx, conn, copies); err != nil {
			return 0, err
		}
	}
	if err := seedReference(ctx, conn, made*(copies+1)); err != nil {
		return 0, err
	}
	tables := append([]string{}, seedTables...)
	tables = append(tables, "reference.i", "reference.f", "reference.t", "reference.o", "reference.e")
	if _, err := conn.Exec(ctx, "VACUUM (ANALYZE) "+strings.Join(tables, ", ")); err != nil {
		return 0, fmt.Errorf("seed: vacuum: %w", err)
	}
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return 0, fmt.Errorf("seed: checkpoint: %w", err)
	}
	return time.Since(began), nil
}

// copyRows adds copies copies of every row of seedTables in one
// transaction.
func copyRows(ctx context.Context, conn *pgx.Conn, copies int) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	// Copy g moves back by g/copies of 23 hours: the newest rows are the
	// warm-up's own, the oldest copy was received 23 hours ago (its traces
	// expire in an hour, so no purge meets them during a suite).
	step := fmt.Sprintf("%d milliseconds", (23 * time.Hour / time.Duration(copies)).Milliseconds())
	for _, table := range seedTables {
		sql, err := copySQL(ctx, tx, table)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sql, copies, step); err != nil {
			return fmt.Errorf("seed: copy %s: %w", table, err)
		}
	}
	return tx.Commit(ctx)
}

// copySQL is the INSERT … SELECT that copies table's rows $1 times, each
// copy g with its keys suffixed "~g", its uuids derived from the
// original's and g, and its timestamps g × $2 earlier. Identity and
// generated columns are left to the table.
func copySQL(ctx context.Context, tx pgx.Tx, table string) (string, error) {
	rows, err := tx.Query(ctx, `
SELECT column_name, data_type FROM information_schema.columns
WHERE table_schema = 'public' AND table_name = $1 AND is_identity = 'NO' AND is_generated = 'NEVER'
ORDER BY ordinal_position`, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var cols, exprs []string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return "", err
		}
		q := pgx.Identifier{name}.Sanitize()
		expr := "s." + q
		switch {
		case seedKeyColumns[name]:
			expr = fmt.Sprintf("s.%s || '~' || g", q)
		case seedUUIDColumns[name] && typ == "uuid":
			expr = fmt.Sprintf("md5(s.%s::text || '~' || g)::uuid", q)
		case typ == "timestamp with time zone":
			expr = fmt.Sprintf("s.%s - g * $2::interval", q)
		}
		cols = append(cols, q)
		exprs = append(exprs, expr)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	if len(cols) == 0 {
		return "", fmt.Errorf("seed: table %s has no columns", table)
	}
	t := pgx.Identifier{table}.Sanitize()
	return fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM %s s CROSS JOIN generate_series(1, $1::int) g",
		t, strings.Join(cols, ", "), strings.Join(exprs, ", "), t), nil
}

// seedKeysSQL draws the reference seed's $1 keys and times: received
// over the last 23 hours. seedReferenceSQL then writes each as the
// reference script leaves a settled signal.
const seedKeysSQL = `
CREATE TEMP TABLE seed_keys ON COMMIT DROP AS
SELECT 'seed:' || md5(g::text) AS k, now() - random() * interval '23 hours' AS at FROM generate_series(1, $1::int) g`

const seedReferenceSQL = `
INSERT INTO reference.i (client_order_id, lock_key, sent_at, outcome) SELECT md5(k), k, at, 'dispatched' FROM seed_keys;
INSERT INTO reference.f (client_order_id, symbol, quantity) SELECT md5(k), 'BTCUSDT', 0.001 FROM seed_keys;
INSERT INTO reference.t (trace_id, fingerprint, status, expires_at)
SELECT k, sha256(convert_to(k, 'UTF8')), 'dispatched', at + interval '24 hours' FROM seed_keys;
INSERT INTO reference.o (trace_id, client_order_id, symbol, quantity, status) SELECT k, md5(k), 'BTCUSDT', 0.001, 'filled' FROM seed_keys;
INSERT INTO reference.e (trace_id, event, at, detail) SELECT k, 'dispatched', at, '{}' FROM seed_keys ORDER BY at`

// seedReference gives the reference script's tables n settled signals.
func seedReference(ctx context.Context, conn *pgx.Conn, n int) error {
	if _, err := conn.Exec(ctx, ReferenceSchema); err != nil {
		return fmt.Errorf("seed: reference schema: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, seedKeysSQL, n); err != nil {
		return fmt.Errorf("seed: reference keys: %w", err)
	}
	if _, err := tx.Exec(ctx, seedReferenceSQL); err != nil {
		return fmt.Errorf("seed: reference: %w", err)
	}
	return tx.Commit(ctx)
}
