package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/jobs"
)

// seedExpiredSQL inserts $2 expired traces the way production leaves them:
// derived trace IDs (random, so the primary key is written all over),
// received between 2 and 1 days ago and so expired at spread times over the
// last day, mostly dispatched with an order reference. One in a hundred is
// failed with its order unknown (no settled intent): the purge must keep
// those (issue 17 B3).
const seedExpiredSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id,
                       order_id, signal, source_ip, received_at, updated_at, expires_at)
SELECT 'd:' || h, h, 'live', 'derived', CASE WHEN g % 100 = 0 THEN 'failed' ELSE 'dispatched' END, 'paper', 'EXPIRED', 'buy',
       'hx' || substr(h, 1, 30), gen_random_uuid(),
       jsonb_build_object('action', 'buy', 'exchange', 'paper', 'quantity', '0.01', 'symbol', 'EXPIRED', 'timestamp', g, 'run', $1::text),
       '127.0.0.1', r, r, r + interval '24 hours'
FROM (SELECT g, encode(sha256(convert_to($1::text || '-' || g, 'UTF8')), 'hex') AS h,
             now() - interval '48 hours' + random() * interval '24 hours' AS r
      FROM generate_series(1, $2::bigint) g) s`

// seedLiveSQL inserts $2 live traces received over the last day (symbol
// LIVE), so the statistics taken before the restore are those of a running
// gateway: every trace live, none expired.
const seedLiveSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id,
                       order_id, signal, source_ip, received_at, updated_at, expires_at)
SELECT 'd:' || h, h, 'live', 'derived', 'dispatched', 'paper', 'LIVE', 'buy', 'hx' || substr(h, 1, 30), gen_random_uuid(),
       jsonb_build_object('action', 'buy', 'exchange', 'paper', 'quantity', '0.01', 'symbol', 'LIVE', 'timestamp', g, 'run', $1::text),
       '127.0.0.1', r, r, r + interval '24 hours'
FROM (SELECT g, encode(sha256(convert_to($1::text || '-live-' || g, 'UTF8')), 'hex') AS h,
             now() - random() * interval '23 hours' AS r
      FROM generate_series(1, $2::bigint) g) s`

// seedEventsSQL gives each seeded trace the three audit rows a new signal
// writes (received, dispatch_started, dispatched), a few milliseconds
// apart.
const seedEventsSQL = `
INSERT INTO trace_events (trace_id, event, at, source_ip, detail)
SELECT t.trace_id, e.event, t.received_at + e.off, '127.0.0.1', e.detail
FROM trace_ids t
CROSS JOIN (VALUES ('received', interval '0', '{"key_source": "derived"}'::jsonb),
                   ('dispatch_started', interval '1 millisecond', '{"exchange": "paper", "symbol": "EXPIRED"}'::jsonb),
                   ('dispatched', interval '3 milliseconds', '{"order_status": "filled"}'::jsonb)) AS e(event, off, detail)
WHERE t.symbol = 'EXPIRED' AND t.signal->>'run' = $1::text`

// seedPurgedSQL gives the table of purged traces the day of history a
// running gateway has there: $2 traces purged a day before the seeded ones
// expired (their own random trace IDs), so the purge adds to an index a
// restore packed, as it does in trace_events' primary key.
const seedPurgedSQL = `
INSERT INTO trace_purges (trace_id, at, status, order_id, received_at, expires_at)
SELECT 'd:' || h, r + interval '24 hours 30 seconds', 'dispatched', gen_random_uuid(), r, r + interval '24 hours'
FROM (SELECT encode(sha256(convert_to($1::text || '-purged-' || g, 'UTF8')), 'hex') AS h,
             now() - interval '72 hours' + random() * interval '24 hours' AS r
      FROM generate_series(1, $2::bigint) g) s`

// restoreIndexesSQL lists the indexes and primary keys of the tables a
// restore loads, with the statements that build them again.
const restoreIndexesSQL = `
SELECT 'ALTER TABLE ' || c.conrelid::regclass || ' DROP CONSTRAINT ' || quote_ident(c.conname),
       'ALTER TABLE ' || c.conrelid::regclass || ' ADD CONSTRAINT ' || quote_ident(c.conname) || ' ' || pg_get_constraintdef(c.oid)
FROM pg_constraint c
WHERE c.conrelid = ANY ($1::regclass[]) AND c.contype = 'p'
UNION ALL
SELECT 'DROP INDEX ' || i.indexrelid::regclass, pg_get_indexdef(i.indexrelid)
FROM pg_index i
WHERE i.indrelid = ANY ($1::regclass[]) AND NOT i.indisprimary`

// SeedExpired inserts n expired traces with three audit events each, and n
// traces purged the day before, loaded the way a restore loads them: rows
// first, then the indexes built, and no ANALYZE, so the purge meets stale
// statistics and unset hint bits, as after a restore or a bulk backfill.
// Before the load it adds n/10 live traces and analyzes: the statistics
// are a running gateway's, which saw every trace live, so a plan that
// trusts them to say how many traces expired is caught (issue 21, ninth
// round). It returns how long the load took.
func SeedExpired(ctx context.Context, pool *pgxpool.Pool, n int) (time.Duration, error) {
	start := time.Now()
	run := RunID()
	if _, err := pool.Exec(ctx, seedLiveSQL, run, n/10); err != nil {
		return 0, fmt.Errorf("seed live traces: %w", err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE trace_ids, trace_events, trace_purges"); err != nil {
		return 0, fmt.Errorf("analyze before the restore: %w", err)
	}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, restoreIndexesSQL, []string{"trace_ids", "trace_events", "trace_purges"})
		if err != nil {
			return err
		}
		var drops, builds []string
		for rows.Next() {
			var drop, build string
			if err := rows.Scan(&drop, &build); err != nil {
				return err
			}
			drops, builds = append(drops, drop), append(builds, build)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, s := range drops {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		if _, err := tx.Exec(ctx, seedExpiredSQL, run, n); err != nil {
			return fmt.Errorf("seed expired traces: %w", err)
		}
		if _, err := tx.Exec(ctx, seedEventsSQL, run); err != nil {
			return fmt.Errorf("seed their events: %w", err)
		}
		if _, err := tx.Exec(ctx, seedPurgedSQL, run, n); err != nil {
			return fmt.Errorf("seed earlier purges: %w", err)
		}
		for _, s := range builds {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("seed expired traces: %w", err)
	}
	return time.Since(start), nil
}

// UnknownKept counts the seeded expired traces whose order is unknown:
// how many are still held, and how many the purge removed (it must remove
// none).
func UnknownKept(ctx context.Context, pool *pgxpool.Pool) (held, purged int, err error) {
	err = pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM trace_ids WHERE symbol = 'EXPIRED' AND status = 'failed'),
       (SELECT count(*) FROM trace_purges WHERE status = 'failed')`).Scan(&held, &purged)
	return held, purged, err
}

// purgeSettledSQL says whether hoox's purge has run at least once and none
// is queued or running.
const purgeSettledSQL = `
SELECT count(*) FILTER (WHERE state = 'completed') > 0
   AND count(*) FILTER (WHERE state NOT IN ('completed', 'cancelled', 'discarded')) = 0
FROM river_job WHERE kind = $1`

// AwaitStartupPurge waits until hoox's purge has run once and no purge is
// queued or running. hoox runs its purge when a replica wins the River
// leadership (RunOnStart): a purge that starts during the seed waits for
// its locks and then deletes the seeded rows under the baseline, which
// then measures a purge against a purge (and the purge's own time misses
// its start).
func AwaitStartupPurge(ctx context.Context, pool *pgxpool.Pool, timeout time.Duration) error {
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	notFinished := fmt.Errorf("hoox's start-up purge has not finished after %s (is the River leader running?)", timeout)
	for {
		var settled bool
		if err := pool.QueryRow(wait, purgeSettledSQL, jobs.PurgeArgs{}.Kind()).Scan(&settled); err != nil {
			// The wait ran out during a read (on a busy machine, dialling
			// a connection can take most of it): still not finished.
			if wait.Err() != nil && ctx.Err() == nil {
				return notFinished
			}
			return fmt.Errorf("await hoox's start-up purge: %w", err)
		}
		if settled {
			return nil
		}
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return notFinished
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PurgeRun is one timed db.Purge.
type PurgeRun struct {
	Result  db.PurgeResult
	Elapsed time.Duration
	// Ended is when the purge finished: a load run begun after it ran
	// beside no purge.
	Ended time.Time
	Err   error
}

// StartPurge runs db.Purge in the background with hoox's defaults (audit
// rows kept) and delivers its result on the channel.
func StartPurge(ctx context.Context, pool *pgxpool.Pool, params db.PurgeParams) <-chan PurgeRun {
	done := make(chan PurgeRun, 1)
	go func() {
		start := time.Now()
		res, err := db.Purge(ctx, pool, params)
		done <- PurgeRun{Result: res, Elapsed: time.Since(start), Ended: time.Now(), Err: err}
	}()
	return done
}
