package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/db"
)

const seedExpiredSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action,
                       signal, source_ip, received_at, updated_at, expires_at)
SELECT 'k:expired-' || $1::text || '-' || g, md5(g::text), 'live', 'client', 'dispatched', 'paper', 'EXPIRED', 'buy',
       '{"action":"buy","exchange":"paper","quantity":"0.01","symbol":"EXPIRED"}'::jsonb, '127.0.0.1',
       now() - interval '2 days', now() - interval '2 days', now() - interval '1 day'
FROM generate_series(1, $2::bigint) g`

// SeedExpired inserts n trace rows that expired a day ago, for the purge
// benchmark, and vacuums the table so the purge starts from a steady state.
func SeedExpired(ctx context.Context, pool *pgxpool.Pool, n int) (time.Duration, error) {
	start := time.Now()
	if _, err := pool.Exec(ctx, seedExpiredSQL, RunID(), n); err != nil {
		return 0, fmt.Errorf("seed expired traces: %w", err)
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE trace_ids"); err != nil {
		return 0, fmt.Errorf("vacuum trace_ids: %w", err)
	}
	return time.Since(start), nil
}

// PurgeRun is one timed db.Purge.
type PurgeRun struct {
	Result  db.PurgeResult
	Elapsed time.Duration
	Err     error
}

// StartPurge runs db.Purge in the background with hoox's defaults (batch
// 5000, audit rows kept) and delivers its result on the channel.
func StartPurge(ctx context.Context, pool *pgxpool.Pool, batch int) <-chan PurgeRun {
	done := make(chan PurgeRun, 1)
	go func() {
		start := time.Now()
		res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: batch, Duty: db.DefaultPurgeDuty, Actor: "bench"})
		done <- PurgeRun{Result: res, Elapsed: time.Since(start), Err: err}
	}()
	return done
}
