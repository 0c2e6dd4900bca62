package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultPurgeBatch is HOOX_PURGE_BATCH's default: rows per purge
// transaction, small enough that no batch holds locks or bloats WAL for long.
const DefaultPurgeBatch = 5000

// SettingLastPurge is the settings key under which Purge records its last
// run as {"at": <RFC 3339>, "traces": n, "events": m}, for GET /admin/stats.
const SettingLastPurge = "last_purge"

// PurgeParams say how much one purge may remove at a time and how long audit
// rows are kept.
type PurgeParams struct {
	// Batch is the most rows one transaction deletes (HOOX_PURGE_BATCH);
	// DefaultPurgeBatch when zero or negative.
	Batch int
	// AuditRetention is how long trace_events rows are kept
	// (HOOX_AUDIT_RETENTION); zero keeps them forever.
	AuditRetention time.Duration
	// Duty is the share of wall time the purge may keep Postgres busy: after
	// each full batch it pauses so that batches take at most this share.
	// Flat out, a purge of a large backlog takes a core and floods the WAL
	// that every signal's commit must flush; paced, the signals keep their
	// latency. 0 (or 1 and above) runs flat out, as `hoox purge` does.
	Duty float64
	// Pacer, when set, decides the pause after each full batch instead of
	// Duty: hoox passes one driven by the signals' own latency
	// (internal/pace), so the purge runs flat out while no signal waits and
	// backs off while signals slow down.
	Pacer Pacer
	// Actor names who ran the purge (the periodic job, the CLI, an admin) in
	// settings.updated_by; "purge" when empty.
	Actor string
}

// Pacer says how long background work pauses after a batch that took
// batch.
type Pacer interface {
	Pause(batch time.Duration) time.Duration
}

// DefaultPurgeDuty paces the periodic purge and POST /admin/purge: a
// half of the time busy, which still clears a million expired rows inside
// a minute on a 2-core machine (docs/BENCHMARKS.md).
const DefaultPurgeDuty = 0.5

// PurgeResult counts what a purge removed.
type PurgeResult struct {
	// Traces is the number of expired trace_ids rows deleted (each got a
	// purged audit event: a trace_purges row).
	Traces int64 `json:"traces"`
	// Events is the number of audit rows (trace_events and trace_purges:
	// trace_history) past the retention deleted.
	Events int64 `json:"events"`
	// PausedSeconds is how long the purge waited between batches so the
	// signals keep their latency (PurgeParams.Pacer or Duty): what a purge
	// that takes long spent yielding rather than working. 0 when it ran
	// flat out.
	PausedSeconds float64 `json:"paused_seconds"`
}

// insertPurgedSQL writes the purged event (a trace_purges row) of every
// trace the enclosing statement's d deleted.
const insertPurgedSQL = `
    INSERT INTO trace_purges (trace_id, status, order_id, received_at, expires_at)
    SELECT trace_id, status, order_id, received_at, expires_at FROM d
`

// purgeTracesSQL deletes one batch of expired traces and writes a purged
// event for each (a trace_purges row, which trace_history presents as the
// trace's `purged` event), in one statement and so one short transaction.
//
// Why it cannot break the claim: a claim never locks trace rows; it takes an
// advisory lock on the trace's lock key and relies on INSERT … ON CONFLICT.
//   - Purge committed first: the claim inserts a fresh trace and the signal
//     executes again, as the TTL promises (with a new client order ID, since
//     the orders of the first execution are kept and counted).
//   - Purge deleted but not yet committed: the INSERT's conflict check waits
//     for the purge's transaction and, once it commits, inserts: same as
//     above.
//   - The claim's INSERT saw the row before the purge deleted it: that repeat
//     answers 409 duplicate from the old row. It arrived at the very moment of
//     expiry, and either answer is correct there.
//
// SKIP LOCKED passes over rows another transaction holds (a reconcile
// resolving its trace, an admin release), so the purge never waits on them
// and two purges (the periodic job and POST /admin/purge) never delete the
// same row twice. Traces whose order may exist at the venue
// (OrderUnknownSQL: reconciling, or failed with the outcome unknown) are
// kept past expiry: the dedup record must outlive the uncertainty; once a
// reconcile or the sweeper settles them a later purge removes them.
//
// Each batch walks trace_ids_expires_at_idx once, from where the previous
// batch stopped ($2, the latest expiry it removed; expiries only grow, as
// every new trace expires a TTL from now), so no batch re-walks the index
// entries its predecessors left dead; it deletes the rows it locked by
// their ctid (a TID scan: the row lock keeps the ctid stable), never
// probing the primary key again, whatever the statistics say. Rows it
// skipped (locked, or the order unknown) stay behind the keyset until the
// next purge starts from the beginning.
const purgeTracesSQL = `
WITH doomed AS (
    SELECT t.ctid FROM trace_ids t
    WHERE t.expires_at < now() AND t.expires_at >= $2 AND NOT ` + OrderUnknownSQL + `
    ORDER BY t.expires_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), d AS (
    DELETE FROM trace_ids t
    WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM doomed))
    RETURNING t.ctid AS row_ctid, t.trace_id, t.status, t.order_id, t.received_at, t.expires_at
), ev AS (` + insertPurgedSQL + `)
SELECT count(*), coalesce(max(expires_at), $2), count(DISTINCT (row_ctid::text::point)[0]) FROM d`

// purgeTracePagesSQL deletes the expired traces in heap pages [$1, $2) of
// trace_ids (a TID range scan, PostgreSQL 14+), with the same conditions,
// locks and purged events as purgeTracesSQL. When the expired rows lie
// scattered over the table (a restore, or months of vacuum reusing free
// space, break the link between expiry and place), deleting in expiry
// order dirties a page per row and, after each checkpoint, writes a full
// 8 kB page image per row to the WAL that every signal's commit waits
// on; sweeping the pages in order dirties each page once for all its
// expired rows.
//
// The expiry is tested on an expression (expires_at + 0 < now()), which no
// index can answer, so the page range is the only way in: with the
// condition written plainly, statistics taken while the traces were live
// (a running gateway's, before a day's traces expired or a restore added
// them) made the planner walk trace_ids_expires_at_idx through every
// expired trace, a heap fetch each, to keep the few in the range: 3–5 s a
// statement instead of tens of milliseconds, and a purge of a million
// traces that missed its minute inside the benchmark suite (issue 21,
// ninth round). Not a difference (expires_at - now()): that fails on a
// trace an operator set to expire at 'infinity', and so would every sweep.
const purgeTracePagesSQL = `
WITH doomed AS (
    SELECT t.ctid FROM trace_ids t
    WHERE t.ctid >= format('(%s,0)', $1::bigint)::tid AND t.ctid < format('(%s,0)', $2::bigint)::tid
      AND t.expires_at + interval '0' < now() AND NOT ` + OrderUnknownSQL + `
    FOR UPDATE SKIP LOCKED
), d AS (
    DELETE FROM trace_ids t
    WHERE t.ctid = ANY (ARRAY(SELECT ctid FROM doomed))
    RETURNING t.ctid AS row_ctid, t.trace_id, t.status, t.order_id, t.received_at, t.expires_at
), ev AS (` + insertPurgedSQL + `)
SELECT count(*), count(DISTINCT (row_ctid::text::point)[0]) FROM d`

// tracePagesSQL is trace_ids' size in pages when the sweep starts; rows
// added later are not expired.
const tracePagesSQL = `SELECT pg_relation_size('trace_ids') / current_setting('block_size')::bigint`

// purgeAuditSQL deletes one batch of an audit table's rows (trace_events
// or trace_purges) older than the retention, walking its index on at from
// where the previous batch stopped ($3) and deleting by ctid, as
// purgeTracesSQL does. The events of a trace kept because its order may
// exist (reconciling, or an intent settled failed: unknown) are kept with
// it, however old: an operator who finds it months later needs the reason
// and the client order ID to ask the venue about (keptTracesSQL, read
// through the two partial indexes of those few rows).
func purgeAuditSQL(table string) string {
	kept := ""
	if table == "trace_events" {
		kept = " AND trace_id NOT IN (" + keptTracesSQL + ")"
	}
	return `
WITH doomed AS (
    SELECT ctid, at FROM ` + table + `
    WHERE at < now() - $2::bigint * interval '1 millisecond' AND at >= $3` + kept + `
    ORDER BY at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
), d AS (
    DELETE FROM ` + table + ` e
    WHERE e.ctid = ANY (ARRAY(SELECT ctid FROM doomed))
    RETURNING e.at
)
SELECT count(*), coalesce(max(at), $3) FROM d`
}

// keptTracesSQL lists the traces whose order may exist at the venue: those
// reconciling (trace_ids_reconciling_idx), those whose intent is settled
// failed (dispatch_intents_unknown_idx) and those with a leg failed as
// unknown (order_legs_unknown_idx: a missed exit, asked about for ever,
// whose leg_failed event is the only place the admin API and the web page
// show which order to look for), and the attempts whose intent is still
// open (dispatch_intents_open_idx): a dead Bybit attempt's intent the
// sweeper left open for the signal's resend has no trace and may stay open
// for ever, its order still looked for. The purge keeps the traces
// (OrderUnknownSQL) and the audit retention their events.
const keptTracesSQL = `SELECT i.trace_id FROM dispatch_intents i WHERE i.outcome = 'failed'
    UNION ALL SELECT i.trace_id FROM dispatch_intents i WHERE i.outcome IS NULL
    UNION ALL SELECT r.trace_id FROM trace_ids r WHERE r.reconciling_since IS NOT NULL
    UNION ALL SELECT l.trace_id FROM order_legs l WHERE l.outcome = 'failed'`

// auditTables hold the audit trail (trace_history is their union).
var auditTables = []string{"trace_events", "trace_purges"}

// recordPurgeSQL keeps the last run where every replica's admin API can
// read it; the time is the database's, like expires_at.
const recordPurgeSQL = `
INSERT INTO settings (key, value, updated_at, updated_by)
VALUES ($1, jsonb_build_object(
        'at', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
        'traces', $2::bigint, 'events', $3::bigint), now(), $4)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`

// Purge deletes expired trace IDs, then audit rows past the retention, each
// in batches of p.Batch rows, one short transaction per batch, until a batch
// comes back short. Orders are never deleted. It records the run under
// SettingLastPurge. The periodic job, `hoox purge` and POST /admin/purge all
// call it, so they report the same counts. On error the result holds what
// was already removed (those batches committed).
func Purge(ctx context.Context, pool *pgxpool.Pool, p PurgeParams) (PurgeResult, error) {
	batch := p.Batch
	if batch <= 0 {
		batch = DefaultPurgeBatch
	}
	actor := p.Actor
	if actor == "" {
		actor = "purge"
	}
	var paused time.Duration // the batches run one at a time, here
	pause := func(took time.Duration) time.Duration {
		var d time.Duration
		switch {
		case p.Pacer != nil:
			d = p.Pacer.Pause(took)
		case p.Duty > 0 && p.Duty < 1:
			d = time.Duration(float64(took) * (1 - p.Duty) / p.Duty)
		}
		paused += max(d, 0)
		return d
	}
	var res PurgeResult
	done := func(err error) (PurgeResult, error) {
		res.PausedSeconds = paused.Seconds()
		return res, err
	}
	var err error
	res.Traces, err = purgeTraces(ctx, pool, batch, pause)
	if err != nil {
		return done(fmt.Errorf("purge expired traces: %w", translate(err)))
	}
	for _, table := range auditTables {
		if p.AuditRetention <= 0 {
			break // zero keeps the audit trail forever
		}
		n, err := purgeAudit(ctx, pool, table, batch, p.AuditRetention, pause)
		res.Events += n
		if err != nil {
			return done(fmt.Errorf("purge audit rows of %s: %w", table, translate(err)))
		}
	}
	if _, err := pool.Exec(ctx, recordPurgeSQL, SettingLastPurge, res.Traces, res.Events, actor); err != nil {
		return done(fmt.Errorf("record last purge: %w", translate(err)))
	}
	return done(nil)
}

// purgeAudit deletes table's rows older than retention, batch by batch.
func purgeAudit(ctx context.Context, pool *pgxpool.Pool, table string, batch int, retention time.Duration, pause func(time.Duration) time.Duration) (int64, error) {
	sql := purgeAuditSQL(table)
	from := time.Time{} // nothing was written before the epoch
	return purgeBatches(ctx, batch, pause, func() (int64, error) {
		var n int64
		err := pool.QueryRow(ctx, sql, batch, retention.Milliseconds(), from).Scan(&n, &from)
		return n, err
	})
}

// purgeTraces removes the expired traces: in expiry order through the
// expiry index while the batches find their rows packed together (the
// steady state: a minute's expiries, written a TTL ago, side by side), and
// by sweeping the table's pages in order once a batch finds them scattered
// (fewer than two rows per page it touched).
//
// A sweep is the purge's last pass. Rows it could not lock (a reconcile or
// an admin release holding them) wait for the next purge, as rows the
// index pass skips do. An index pass after it walked the index entries of
// every trace the sweep had deleted, each fetched from the heap until
// vacuum removes them: 2.3 s in one statement after a million, the
// signals' p99 tenfold in that second, and 4-18 s when walked in windows
// of expiry time instead (issue 21, twentieth round).
//
// Every transaction deletes from at most about maxDirtyPages heap pages:
// the index pass starts with probeBatch rows and grows or shrinks its
// batch by the pages the last one touched, and the sweep's page ranges
// are at most that long. A first batch of 5,000 rows over scattered rows
// dirtied a page per row and, after the checkpoint that more often than
// not precedes a purge, wrote a full page image for each: 40 MB of WAL in
// one commit, which every signal committing after it waited to flush
// (p99 0.7 s in the purge's first seconds; issue 21, eleventh round).
func purgeTraces(ctx context.Context, pool *pgxpool.Pool, batch int, pause func(time.Duration) time.Duration) (int64, error) {
	total, scattered, err := purgeTracesByExpiry(ctx, pool, batch, pause)
	if err != nil || !scattered {
		return total, err
	}
	n, err := sweepTracePages(ctx, pool, batch, pause)
	return total + n, err
}

// maxDirtyPages is about the most heap pages of trace_ids one purge
// transaction deletes from. After a checkpoint each page is a full 8 kB
// image in the WAL that the signals' commits wait to flush: 256 pages are
// about 2 MB.
const maxDirtyPages = 256

// probeBatch is the size of the index pass's first batch, which finds out
// whether the expired rows lie packed together or scattered.
const probeBatch = 200

// resize is the next batch (rows, or pages for the sweep) after one of
// size that deleted n of its limit rows from dirtied pages: halved while
// it dirties more than maxDirtyPages or deletes more than limit rows,
// doubled (up to most) while it dirties and deletes less than half.
func resize(size, most, n, limit, dirtied int64) int64 {
	switch {
	case dirtied > maxDirtyPages || n > limit:
		return max(size/2, 1)
	case dirtied < maxDirtyPages/2 && n < limit/2:
		return min(size*2, most)
	}
	return size
}

// purgeTracesByExpiry runs purgeTracesSQL batch after batch until one
// comes back short, or until a batch's rows lay scattered, which it says.
func purgeTracesByExpiry(ctx context.Context, pool *pgxpool.Pool, batch int, pause func(time.Duration) time.Duration) (total int64, scattered bool, err error) {
	from := time.Time{} // nothing expires before the epoch
	size := int64(min(batch, probeBatch))
	for {
		start := time.Now()
		var n, pages int64
		if err := pool.QueryRow(ctx, purgeTracesSQL, size, from).Scan(&n, &from, &pages); err != nil {
			return total, false, err
		}
		total += n
		if n < size {
			return total, false, nil
		}
		if pages > n/2 {
			return total, true, nil
		}
		size = resize(size, int64(batch), n, int64(batch), pages)
		if err := sleep(ctx, pause(time.Since(start))); err != nil {
			return total, false, err
		}
	}
}

// sweepTracePages runs purgeTracePagesSQL over the table's pages in
// order, sizing each range of pages so that it deletes at most about batch
// rows, and never from more than maxDirtyPages pages: a range is at most
// that many pages long. Ranges of live traces alone had grown it (doubled
// while they deleted nothing), and the first range to reach the expired
// traces then deleted from thousands of pages in one commit (issue 21,
// twentieth round); reading a few more short ranges of live pages costs
// milliseconds.
func sweepTracePages(ctx context.Context, pool *pgxpool.Pool, batch int, pause func(time.Duration) time.Duration) (int64, error) {
	var pages int64
	if err := pool.QueryRow(ctx, tracePagesSQL).Scan(&pages); err != nil {
		return 0, err
	}
	var total int64
	chunk := int64(64)
	for at := int64(0); at < pages; {
		start := time.Now()
		var n, dirtied int64
		if err := pool.QueryRow(ctx, purgeTracePagesSQL, at, at+chunk).Scan(&n, &dirtied); err != nil {
			return total, err
		}
		total += n
		at += chunk
		chunk = resize(chunk, maxDirtyPages, n, int64(batch), dirtied)
		if err := sleep(ctx, pause(time.Since(start))); err != nil {
			return total, err
		}
	}
	return total, nil
}

// sleep waits d, or returns ctx's error if it ends first (or has ended).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// purgeBatches runs one batch after another until a batch comes back short,
// pausing after each full one for as long as pause says.
func purgeBatches(ctx context.Context, batch int, pause func(took time.Duration) time.Duration, run func() (int64, error)) (int64, error) {
	var total int64
	for {
		start := time.Now()
		n, err := run()
		if err != nil {
			return total, err
		}
		total += n
		if n < int64(batch) {
			return total, nil
		}
		if err := sleep(ctx, pause(time.Since(start))); err != nil {
			return total, err
		}
	}
}
