package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/internal/pgconv"
)

// Stranded is work the sweeper must finish because nobody else will: an
// intent with no outcome whose attempt died (TraceID empty: no trace exists,
// the claim rolled back with it), or a reconciling trace whose River job
// ended without settling it (TraceID set).
type Stranded struct {
	Intent Intent
	// TraceID is the reconciling trace to settle; empty for a bare intent.
	TraceID string
	// NoIntent is true for a reconciling trace that has no intent (written
	// before intents existed): nothing can be looked up.
	NoIntent bool
	// Unknown is true for a trace that ended failed with its order unknown
	// (its intent failed): the sweeper asks again (ListUnknown).
	Unknown bool
	// Released is true for an Unknown whose trace (TraceID) an operator
	// released by force: nobody holds the key, and an order found is
	// recorded under a trace created again from the intent, as for a bare
	// intent.
	Released bool
	// LeftOpen is true for a bare intent the venue has answered about
	// before without deciding it (asked_at set): a dead Bybit attempt's,
	// not found past its window and left open so that the signal's resend
	// sends it again under its ID, while the sweeper keeps looking for a
	// late booking of the original.
	LeftOpen bool
}

// UnknownAskMax is the longest the sweeper waits between two asks about
// an order whose existence stays unknown while the venue keeps answering
// that it holds none (unknownDue's interval '1 hour').
const UnknownAskMax = time.Hour

// intentUnknownDue (and strandedUnknownDue, unaliased; legs'
// legUnknownDue) is when an order whose existence stays unknown is asked about
// again, given its row's last answered ask (asked_at) and its last send
// (sent): at once while the venue has never answered about it (asked_at
// null: a fresh unknown, or one given up during an outage, whose first
// answer may reopen or resolve it), else once a quarter of the time the
// venue had then been answering "not there" has passed, at least the
// sweep's grace ($1 ms) and at most UnknownAskMax. An ask the venue did
// not answer leaves asked_at as it was, so an outage never lengthens the
// wait; a missed trade asked about for days costs about one ask an hour,
// not one per grace (a Bybit miss is up to 14 queries: history and
// realtime, bybit.Venue.Lookup).
const (
	intentUnknownDue = `(i.asked_at IS NULL OR i.asked_at < now() - least(greatest((i.asked_at - i.sent_at) / 4,
         $1::bigint * interval '1 millisecond'), interval '1 hour'))`
	strandedUnknownDue = `(asked_at IS NULL OR asked_at < now() - least(greatest((asked_at - sent_at) / 4,
         $1::bigint * interval '1 millisecond'), interval '1 hour'))`
)

// unknownIntentsSQL lists failed intents that still name their failed
// trace's order and are due to be asked about again (unknownDue), least
// recently asked first (settled_at is refreshed on each ask that decides
// nothing).
const unknownIntentsSQL = `
SELECT ` + intentColumns + `
FROM dispatch_intents i
WHERE i.outcome = 'failed' AND i.settled_at < now() - $1::bigint * interval '1 millisecond'
  AND ` + intentUnknownDue + `
  AND EXISTS (SELECT 1 FROM trace_ids t
              WHERE t.trace_id = i.trace_id AND t.client_order_id = i.client_order_id AND t.status = 'failed')
ORDER BY i.settled_at
LIMIT $2`

// releasedUnknownIntentsSQL lists failed intents whose trace an operator
// released by force (no trace holds it any more), least recently asked
// first. In window mode no later execution of the signal asks about such
// an order (ClaimResult.Unknown holds only the execution's own); for a
// client or derived key only a resend would, and none may come.
const releasedUnknownIntentsSQL = `
SELECT ` + intentColumns + `
FROM dispatch_intents i
WHERE i.outcome = 'failed' AND i.settled_at < now() - $1::bigint * interval '1 millisecond'
  AND ` + intentUnknownDue + `
  AND NOT EXISTS (SELECT 1 FROM trace_ids t WHERE t.trace_id = i.trace_id)
ORDER BY i.settled_at
LIMIT $2`

// ListUnknown returns at most limit traces that ended failed with their
// order unknown and were not asked about for every, and as many such
// intents whose trace was released by force, so the sweeper can resolve
// them (DESIGN: "Unknown never frees a key" — nor blocks it forever once
// the venue answers; a forced release frees the key, never the order).
func ListUnknown(ctx context.Context, q DBTX, every time.Duration, limit int) ([]Stranded, error) {
	var out []Stranded
	for _, released := range []bool{false, true} {
		query := unknownIntentsSQL
		if released {
			query = releasedUnknownIntentsSQL
		}
		rows, err := q.Query(ctx, query, every.Milliseconds(), limit)
		if err != nil {
			return nil, fmt.Errorf("list unknown intents: %w", translate(err))
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Stranded, error) {
			in, err := scanIntent(row)
			return Stranded{Intent: in, TraceID: in.TraceID, Unknown: true, Released: released}, err
		})
		if err != nil {
			return nil, fmt.Errorf("list unknown intents: %w", translate(err))
		}
		out = append(out, found...)
	}
	return out, nil
}

const unknownLockSQL = `
SELECT t.status = 'failed' AND i.outcome = 'failed', i.sent_at,
       (extract(epoch FROM clock_timestamp() - i.sent_at) * 1000000)::bigint
FROM trace_ids t JOIN dispatch_intents i ON i.client_order_id = t.client_order_id
WHERE t.trace_id = $1 AND i.client_order_id = $2
FOR UPDATE`

// releasedUnknownLockSQL is unknownLockSQL for an intent whose trace was
// released: still failed, and still no trace of its own (a resend of a
// client key may have claimed the trace ID again and settled the intent).
const releasedUnknownLockSQL = `
SELECT i.outcome = 'failed' AND NOT EXISTS (SELECT 1 FROM trace_ids t WHERE t.trace_id = i.trace_id), i.sent_at,
       (extract(epoch FROM clock_timestamp() - i.sent_at) * 1000000)::bigint
FROM dispatch_intents i
WHERE i.client_order_id = $1
FOR UPDATE`

// resolveUnknownTraceSQL settles a failed trace whose order turned up.
const resolveUnknownTraceSQL = `
UPDATE trace_ids SET status = $2, order_id = coalesce($3, order_id), updated_at = now()
WHERE trace_id = $1 AND status = 'failed'`

// strandedIntentsSQL lists open intents older than the grace ($1 ms) that
// the venue never answered about: a dead attempt's, oldest send first.
// Intents left open for the resend are listed apart (leftOpenIntentsSQL),
// so that however many there are, and however long their venue does not
// answer, they never take this batch from a dead attempt at another venue.
const strandedIntentsSQL = `
SELECT ` + intentColumns + `, false
FROM dispatch_intents
WHERE outcome IS NULL AND asked_at IS NULL AND sent_at < now() - $1::bigint * interval '1 millisecond'
ORDER BY sent_at
LIMIT $2`

// leftOpenIntentsSQL lists the dead Bybit attempts left open after their
// venue answered that it holds none (asked_at set: Stranded.LeftOpen) that
// are due to be asked about again (unknownDue), in turns across venues
// (exchange and mode, the sweep's unit of "gave no answer"): each venue's
// oldest first, then each one's second, and so on. A venue that does not
// answer (an outage, a key that can no longer read, a venue removed from
// the config) keeps all of its left-open intents due, and the sweep asks it
// once; the turns keep them from filling the batch ahead of another
// venue's, whose original may have been booked late and must be recorded.
const leftOpenIntentsSQL = `
SELECT ` + intentColumns + `, true
FROM (SELECT *, row_number() OVER (PARTITION BY exchange, mode ORDER BY sent_at) AS turn
      FROM dispatch_intents
      WHERE outcome IS NULL AND asked_at IS NOT NULL AND sent_at < now() - $1::bigint * interval '1 millisecond'
        AND ` + strandedUnknownDue + `) i
ORDER BY turn, sent_at
LIMIT $2`

// River's live job states: a reconcile in any of them will still run — but
// for a `running` one whose attempt began longer ago than $3 ms: its worker
// is gone (a replica killed with -9 leaves its job `running` until River's
// rescuer retries it, at its next pass after jobs' RescueStuckJobsAfter),
// and the sweeper settles the trace from the venue meanwhile. A worker still alive holds the trace's lock, which the sweeper
// takes before it decides anything. The traces come from
// trace_ids_reconciling_idx (reconciling_since is updated_at while a
// trace is reconciling, null otherwise: migration 00030), not from a scan
// of every trace on each sweep, the longest reconciling first.
const orphanReconcilingSQL = `
SELECT t.trace_id, i.client_order_id IS NULL
FROM (SELECT trace_id, client_order_id, reconciling_since
      FROM trace_ids
      WHERE reconciling_since < now() - $1::bigint * interval '1 millisecond') t
LEFT JOIN dispatch_intents i ON i.client_order_id = t.client_order_id
WHERE NOT EXISTS (
    SELECT 1 FROM river_job j
    WHERE j.kind = 'reconcile' AND j.args->>'trace_id' = t.trace_id
      AND (j.state IN ('available', 'pending', 'retryable', 'scheduled')
           OR (j.state = 'running' AND j.attempted_at > now() - $3::bigint * interval '1 millisecond')))
ORDER BY t.reconciling_since
LIMIT $2`

// ListStranded returns at most limit intents older than grace with no
// outcome that the venue never answered about, at most limit such intents
// left open for the resend that are due to be asked again, and reconciling traces untouched for grace whose reconcile job is
// gone (completed, cancelled or discarded without settling them, or
// `running` for longer than dead: its worker died with its replica).
func ListStranded(ctx context.Context, q DBTX, grace, dead time.Duration, limit int) ([]Stranded, error) {
	var out []Stranded
	for _, query := range []string{strandedIntentsSQL, leftOpenIntentsSQL} {
		rows, err := q.Query(ctx, query, grace.Milliseconds(), limit)
		if err != nil {
			return nil, fmt.Errorf("list stranded intents: %w", translate(err))
		}
		found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Stranded, error) {
			var s Stranded
			err := scanIntentWith(row, &s.Intent, &s.LeftOpen)
			return s, err
		})
		if err != nil {
			return nil, fmt.Errorf("list stranded intents: %w", translate(err))
		}
		out = append(out, found...)
	}
	rows, err := q.Query(ctx, orphanReconcilingSQL, grace.Milliseconds(), limit, dead.Milliseconds())
	if err != nil {
		return nil, fmt.Errorf("list orphaned reconciles: %w", translate(err))
	}
	type orphan struct {
		traceID  string
		noIntent bool
	}
	orphans, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (orphan, error) {
		var o orphan
		err := row.Scan(&o.traceID, &o.noIntent)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("list orphaned reconciles: %w", translate(err))
	}
	for _, o := range orphans {
		s := Stranded{TraceID: o.traceID, NoIntent: o.noIntent, Intent: Intent{LockKey: LockKeyOf(o.traceID), TraceID: o.traceID}}
		if !o.noIntent {
			in, err := getIntentByTrace(ctx, q, o.traceID)
			if err != nil {
				return nil, err
			}
			in.TraceID = o.traceID
			s.Intent = in
		}
		out = append(out, s)
	}
	return out, nil
}

func getIntentByTrace(ctx context.Context, q DBTX, traceID string) (Intent, error) {
	in, err := scanIntent(q.QueryRow(ctx, `SELECT `+intentColumns+` FROM dispatch_intents
WHERE client_order_id = (SELECT client_order_id FROM trace_ids WHERE trace_id = $1)`, traceID))
	if err != nil {
		return Intent{}, fmt.Errorf("intent of trace %s: %w", traceID, translate(err))
	}
	return in, nil
}

// Recovery is how the sweeper settles one stranded item.
type Recovery struct {
	// TraceStatus is the trace's status after recovery; empty leaves the
	// trace alone (a bare intent whose order was never placed: there is no
	// trace, and the signal may be sent again).
	TraceStatus TraceStatus
	// Order is the order found at the venue; nil when none is.
	Order *OrderRow
	// IntentOutcome settles the intent; empty when there is no intent.
	IntentOutcome IntentOutcome
	// Answered records that the venue answered the ask without deciding
	// it (the intent's asked_at, which spaces the next asks: unknownDue).
	Answered bool
	Events   []Event
	// BeforeCommit, when set, runs in the transaction after the writes.
	BeforeCommit TxHook
}

// strandedIntentLockSQL reads a bare intent under the lock: still open, its
// last send, and whether the venue has answered about it (LeftOpen) — an
// overlapping sweep (another replica's) may have left it open since this
// one listed it, and an intent left open is never given up.
const strandedIntentLockSQL = `
SELECT outcome IS NULL, sent_at, (extract(epoch FROM clock_timestamp() - sent_at) * 1000000)::bigint, asked_at IS NOT NULL
FROM dispatch_intents WHERE client_order_id = $1 FOR UPDATE`

// strandedSentAtSQL reads an orphaned reconcile's intent's last send under
// the lock: a reconcile or a resend may have sent its order again since the
// sweep listed it.
const strandedSentAtSQL = `
SELECT sent_at, (extract(epoch FROM clock_timestamp() - sent_at) * 1000000)::bigint
FROM dispatch_intents WHERE client_order_id = $1`

const strandedTraceLockSQL = `SELECT status = 'reconciling' FROM trace_ids WHERE trace_id = $1 FOR UPDATE`

// createSweptTraceSQL creates the trace a dead attempt would have
// committed, from its intent, so a later resend is a duplicate. A trace
// already there is only settled if it was left reconciling.
const createSweptTraceSQL = `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id,
                       order_id, signal, source_ip, signal_time, received_at, updated_at, expires_at)
SELECT i.trace_id, i.fingerprint, i.mode, i.key_source, $2, i.exchange, i.symbol, i.action, i.client_order_id,
       $3, i.signal, i.source_ip, i.signal_time, i.received_at, now(),
       greatest(i.received_at + $4::bigint * interval '1 millisecond', now())
FROM dispatch_intents i WHERE i.client_order_id = $1
ON CONFLICT (trace_id) DO UPDATE
SET status = excluded.status, order_id = excluded.order_id, client_order_id = excluded.client_order_id, updated_at = now()
WHERE trace_ids.status IN ('claimed', 'reconciling')`

const settleSweptTraceSQL = `
UPDATE trace_ids SET status = $2, order_id = coalesce($3, order_id), updated_at = now()
WHERE trace_id = $1 AND status = 'reconciling'`

// Recover settles one stranded item in one transaction that holds the
// trace's advisory lock (waiting at most lockWait, else ErrLockTimeout: an
// attempt is live, try later) and re-checks that the item is still
// stranded; decide (which asks the venue, never places) runs only then,
// with the item as it stands under the lock (its intent's SentAt re-read:
// an attempt may have sent the order again since the item was listed, and
// a "not found" counts only after that send's accept window; a bare
// intent's LeftOpen re-read: another sweep may have left it open since).
// ttl is the trace TTL for a trace created from the intent. It reports
// whether decide ran and its recovery committed.
func Recover(ctx context.Context, pool *pgxpool.Pool, s Stranded, lockWait, ttl time.Duration,
	decide func(ctx context.Context, current Stranded) (Recovery, error)) (bool, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, translate(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	var open bool
	sentAgo := int64(s.Intent.SentAgo / time.Microsecond)
	b := &pgx.Batch{}
	queueTraceLock(b, s.Intent.LockKey, lockWait)
	switch {
	case s.Unknown && s.Released:
		b.Queue(releasedUnknownLockSQL, s.Intent.ClientOrderID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&open, &s.Intent.SentAt, &sentAgo)
		})
	case s.Unknown:
		b.Queue(unknownLockSQL, s.TraceID, s.Intent.ClientOrderID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&open, &s.Intent.SentAt, &sentAgo)
		})
	case s.TraceID == "":
		b.Queue(strandedIntentLockSQL, s.Intent.ClientOrderID).QueryRow(func(row pgx.Row) error {
			return row.Scan(&open, &s.Intent.SentAt, &sentAgo, &s.LeftOpen)
		})
	default:
		b.Queue(strandedTraceLockSQL, s.TraceID).QueryRow(func(row pgx.Row) error { return row.Scan(&open) })
		if !s.NoIntent {
			b.Queue(strandedSentAtSQL, s.Intent.ClientOrderID).QueryRow(func(row pgx.Row) error {
				return row.Scan(&s.Intent.SentAt, &sentAgo)
			})
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		err = translate(err)
		if errors.Is(err, ErrNotFound) {
			return false, nil // settled or removed since it was listed
		}
		return false, err
	}
	if !open {
		return false, nil
	}
	s.Intent.SentAgo = time.Duration(sentAgo) * time.Microsecond
	r, err := decide(ctx, s)
	if err != nil {
		return false, err
	}

	b = &pgx.Batch{}
	queueRecovery(b, s, r, ttl)
	if err := commitWith(ctx, tx, b, r.BeforeCommit); err != nil {
		return false, err
	}
	return true, nil
}

// queueRecovery queues the writes that settle stranded item s as r says.
func queueRecovery(b *pgx.Batch, s Stranded, r Recovery, ttl time.Duration) {
	var orderID *uuid.UUID
	if r.Order != nil {
		queueOrder(b, r.Order)
		orderID = &r.Order.ID
	}
	switch {
	case r.TraceStatus == "":
	case s.TraceID == "", s.Unknown && s.Released:
		// A released unknown's order turned up: its trace is created again
		// from the intent, as a dead attempt's would be, so a resend of a
		// client key is answered with that order.
		b.Queue(createSweptTraceSQL, s.Intent.ClientOrderID, r.TraceStatus, pgconv.UUIDPtr(orderID), ttl.Milliseconds())
	case s.Unknown:
		b.Queue(resolveUnknownTraceSQL, s.TraceID, r.TraceStatus, pgconv.UUIDPtr(orderID))
	default:
		b.Queue(settleSweptTraceSQL, s.TraceID, r.TraceStatus, pgconv.UUIDPtr(orderID))
	}
	if r.IntentOutcome != "" && !s.NoIntent {
		b.Queue(SettleIntentSQL, s.Intent.ClientOrderID, r.IntentOutcome)
	}
	if r.Answered && !s.NoIntent {
		b.Queue(`UPDATE dispatch_intents SET asked_at = now() WHERE client_order_id = $1`, s.Intent.ClientOrderID)
	}
	queueEvents(b, r.Events)
}

// RecoverEarlier settles, inside this claim, the open intent of an earlier
// execution of the same lock key (window mode) as the sweeper would: the
// claim holds the lock key's advisory lock, so nothing else settles it
// meanwhile. The writes (a trace created from the intent, its order, the
// intent's outcome, the events, r.BeforeCommit's) commit with the claim's
// Record, or roll back with it for the sweeper or the next attempt to redo.
func (c *ClaimTx) RecoverEarlier(ctx context.Context, clientOrderID string, r Recovery, ttl time.Duration) error {
	if c.done {
		return errors.New("claim transaction already finished")
	}
	b := &pgx.Batch{}
	queueRecovery(b, Stranded{Intent: Intent{ClientOrderID: clientOrderID}}, r, ttl)
	if err := c.conn.SendBatch(ctx, b).Close(); err != nil {
		c.Rollback(ctx)
		return translate(err)
	}
	if err := runHooks(ctx, c.Tx(), []TxHook{r.BeforeCommit}); err != nil {
		c.Rollback(ctx)
		return err
	}
	return nil
}
