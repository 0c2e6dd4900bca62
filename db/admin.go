package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TraceRow is a trace_ids row as operators see it through the admin API.
type TraceRow struct {
	TraceID       string      `db:"trace_id"`
	Fingerprint   string      `db:"fingerprint"`
	Mode          string      `db:"mode"`
	KeySource     string      `db:"key_source"`
	Status        TraceStatus `db:"status"`
	Exchange      string      `db:"exchange"`
	Symbol        string      `db:"symbol"`
	Action        string      `db:"action"`
	ClientOrderID *string     `db:"client_order_id"`
	OrderID       *uuid.UUID  `db:"order_id"`
	SourceIP      *string     `db:"source_ip"`
	SignalTime    *time.Time  `db:"signal_time"`
	ReceivedAt    time.Time   `db:"received_at"`
	UpdatedAt     time.Time   `db:"updated_at"`
	ExpiresAt     time.Time   `db:"expires_at"`
	// Signal is the stored canonical request (never holding the secret).
	// List queries leave it empty to keep pages small.
	Signal json.RawMessage `db:"signal"`
}

// EventRow is one row of the audit trail (trace_history).
type EventRow struct {
	ID       int64           `db:"id"`
	TraceID  string          `db:"trace_id"`
	Event    string          `db:"event"`
	At       time.Time       `db:"at"`
	SourceIP *string         `db:"source_ip"`
	Detail   json.RawMessage `db:"detail"`
}

// ListFilter narrows an admin listing. Empty strings and zero times mean
// "any", so the SQL stays static: every predicate is written once and
// switched off with a NULL parameter rather than concatenated in.
type ListFilter struct {
	Status   string
	Exchange string
	Symbol   string
	Mode     string
	Since    time.Time // inclusive
	Until    time.Time // exclusive
	// FanOut is a trace ID as a venue's default account has it
	// (signal.SplitAccountTrace's base): only that trace and the same
	// signal's traces on named accounts ("@<account>:<base>") match.
	FanOut string
	// Limit is the page size; the caller bounds it.
	Limit int
}

// TraceCursor is the keyset position after the last trace of a page: the
// listing is ordered by (received_at DESC, trace_id DESC), the order of
// trace_ids_received_at_idx, so a page is one index range scan however deep.
type TraceCursor struct {
	ReceivedAt time.Time
	TraceID    string
}

// OrderCursor is the keyset position after the last order of a page, in the
// order of orders_created_at_idx (created_at DESC, id DESC).
type OrderCursor struct {
	CreatedAt time.Time
	ID        uuid.UUID
}

func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

const listTracesSQL = `
SELECT trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id, order_id,
       host(source_ip) AS source_ip, signal_time, received_at, updated_at, expires_at, NULL::jsonb AS signal
FROM trace_ids
WHERE ($1::text IS NULL OR status = $1)
  AND ($2::text IS NULL OR exchange = $2)
  AND ($3::text IS NULL OR symbol = $3)
  AND ($4::text IS NULL OR mode = $4)
  AND ($5::timestamptz IS NULL OR received_at >= $5)
  AND ($6::timestamptz IS NULL OR received_at < $6)
  AND ($7::timestamptz IS NULL OR (received_at, trace_id) < ($7, $8::text))
  AND ($10::text IS NULL OR trace_id = $10 OR regexp_replace(trace_id, '^(test:)?@[a-z0-9_-]+:', '\1') = $10)
ORDER BY received_at DESC, trace_id DESC
LIMIT $9`

// ListTraces returns up to f.Limit traces newest first, starting after
// after (nil for the first page).
func ListTraces(ctx context.Context, q DBTX, f ListFilter, after *TraceCursor) ([]TraceRow, error) {
	var afterAt *time.Time
	var afterID *string
	if after != nil {
		afterAt, afterID = &after.ReceivedAt, &after.TraceID
	}
	return list[TraceRow](ctx, q, "traces", listTracesSQL, f, afterAt, afterID)
}

// list runs one of the listings (listTracesSQL, listOrdersSQL): the filter's
// predicates, switched off by NULLs, then the keyset position and the page
// size, in that order.
func list[T any](ctx context.Context, q DBTX, what, sql string, f ListFilter, afterAt *time.Time, afterID any) ([]T, error) {
	rows, err := q.Query(ctx, sql, nullText(f.Status), nullText(f.Exchange), nullText(f.Symbol),
		nullText(f.Mode), nullTime(f.Since), nullTime(f.Until), afterAt, afterID, f.Limit, nullText(f.FanOut))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, translate(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[T])
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, translate(err))
	}
	return out, nil
}

// orderColumns reads side as the empty string when null (a close refused
// before its side was known), so OrderRow keeps a plain string.
const orderColumns = `id, trace_id, client_order_id, exchange, symbol, action, coalesce(side, '') AS side, order_type,
       quantity, price, leverage, mode, status, exchange_order_id, fill_price, reject_reason, filled_quantity, role, created_at,
       take_profit, stop_loss, avg_price, fee, fee_asset, updated_at, final_at, cancelled_by, strategy, base_asset,
       callback_rate, trailing_distance, executed_exit, unfollowed_at`

const listOrdersSQL = `
SELECT ` + orderColumns + `
FROM orders
WHERE ($1::text IS NULL OR status = $1)
  AND ($2::text IS NULL OR exchange = $2)
  AND ($3::text IS NULL OR symbol = $3)
  AND ($4::text IS NULL OR mode = $4)
  AND ($5::timestamptz IS NULL OR created_at >= $5)
  AND ($6::timestamptz IS NULL OR created_at < $6)
  AND ($7::timestamptz IS NULL OR (created_at, id) < ($7, $8::uuid))
  AND ($10::text IS NULL OR trace_id = $10 OR regexp_replace(trace_id, '^(test:)?@[a-z0-9_-]+:', '\1') = $10)
ORDER BY created_at DESC, id DESC
LIMIT $9`

// ListOrders returns up to f.Limit orders newest first, starting after after
// (nil for the first page). Status filters the order status.
func ListOrders(ctx context.Context, q DBTX, f ListFilter, after *OrderCursor) ([]OrderRow, error) {
	var afterAt *time.Time
	var afterID *uuid.UUID
	if after != nil {
		afterAt, afterID = &after.CreatedAt, &after.ID
	}
	return list[OrderRow](ctx, q, "orders", listOrdersSQL, f, afterAt, afterID)
}

// TraceDetail is everything recorded about one trace ID. Trace is nil once
// the trace was purged or released: its orders and events outlive it, and
// operators audit those too.
type TraceDetail struct {
	Trace  *TraceRow
	Orders []OrderRow
	Events []EventRow
}

const getTraceSQL = `
SELECT trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, client_order_id, order_id,
       host(source_ip) AS source_ip, signal_time, received_at, updated_at, expires_at, signal
FROM trace_ids WHERE trace_id = $1`

const traceOrdersSQL = `
SELECT ` + orderColumns + `
FROM orders WHERE trace_id = $1
ORDER BY created_at, id`

const traceEventsSQL = `
SELECT id, trace_id, event, at, host(source_ip) AS source_ip, detail
FROM trace_history WHERE trace_id = $1
ORDER BY at, id`

// GetTrace reads a trace, its orders and its audit events in time order, in
// one round trip and one snapshot. It returns ErrNotFound when nothing at all
// is recorded under traceID.
func GetTrace(ctx context.Context, pool TxBeginner, traceID string) (TraceDetail, error) {
	var d TraceDetail
	// REPEATABLE READ: the three reads see one moment, so an event never
	// shows without the order it announces.
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(getTraceSQL, traceID).Query(func(rows pgx.Rows) error {
			t, err := pgx.CollectRows(rows, pgx.RowToStructByName[TraceRow])
			if err == nil && len(t) == 1 {
				d.Trace = &t[0]
			}
			return err
		})
		b.Queue(traceOrdersSQL, traceID).Query(func(rows pgx.Rows) error {
			var err error
			d.Orders, err = pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
			return err
		})
		b.Queue(traceEventsSQL, traceID).Query(func(rows pgx.Rows) error {
			var err error
			d.Events, err = pgx.CollectRows(rows, pgx.RowToStructByName[EventRow])
			return err
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return TraceDetail{}, fmt.Errorf("get trace: %w", translate(err))
	}
	if d.Trace == nil && len(d.Orders) == 0 && len(d.Events) == 0 {
		return TraceDetail{}, ErrNotFound
	}
	return d, nil
}

// ReleaseParams describe an operator's release of a trace ID.
type ReleaseParams struct {
	TraceID string
	// By names who released it, for the audit trail ("admin").
	By string
	// Reason is the operator's optional note.
	Reason string
	// LockWait bounds the wait for a first attempt still holding the
	// trace's lock: the caller's configured lock wait (HOOX_LOCK_WAIT, as
	// api.Config.LockWait), so a release waits as long as a repeat would.
	// Postgres counts it in whole milliseconds; less than 1 ms is 1 ms,
	// never "wait forever".
	LockWait time.Duration
	// Force releases a trace whose order may exist at the venue (it ended
	// failed with its outcome unknown): the operator has checked the venue.
	// The release is audited as forced, and the next attempt under the key
	// still looks up that order before placing. A reconciling trace is
	// never released.
	Force bool
	// ReceivedAt, when set, names the claim to release: the trace's
	// received_at as the operator saw it. If the trace was released and
	// claimed again since (a resend placed a new order under it), the
	// release is refused with ErrClaimChanged rather than freeing the new
	// claim, which would let the signal execute a third time. Compared
	// under the lock, so no claim can slip in between.
	ReceivedAt time.Time
}

// LockKeyOf returns the advisory lock key the claim takes for traceID: the
// ID itself, except for a window trace ("[test:]w:<hash>:<unix ms>"), whose
// lock leaves out the time (see signal.Trace.LockKey), also on a named
// account ("[test:]@<account>:w:<hash>:<unix ms>", signal.DeriveAccountTrace).
func LockKeyOf(traceID string) string {
	rest := strings.TrimPrefix(traceID, "test:")
	if strings.HasPrefix(rest, "@") {
		if j := strings.IndexByte(rest, ':'); j > 0 {
			rest = rest[j+1:]
		}
	}
	if !strings.HasPrefix(rest, "w:") {
		return traceID
	}
	i := strings.LastIndexByte(traceID, ':')
	if i <= len(traceID)-len(rest)+1 {
		return traceID
	}
	return traceID[:i]
}

// ErrReconciling means a trace cannot be released while it is
// reconciling: its order may exist at the venue, and releasing the key
// would let a resend place a second one.
var ErrReconciling = errors.New("trace is reconciling")

// ErrOrderUnknown means a trace cannot be released without Force: it ended
// failed and whether its order exists at the venue is unknown.
var ErrOrderUnknown = errors.New("whether the trace's order exists at the venue is unknown")

// ErrClaimChanged means the trace is held by another claim than the one a
// release named (ReleaseParams.ReceivedAt): it was released and claimed
// again since the operator looked.
var ErrClaimChanged = errors.New("the trace was claimed again since")

// OrderUnknownSQL is true for the trace row t when its order may exist at
// the venue: it is reconciling, or it ended failed without its intent
// proving the outcome (the reconcile or the sweeper gave up, a venue that
// may fill a late request never showed the order, or no intent names the
// order). Such a trace is neither purged nor released unforced (DESIGN:
// "Unknown never frees a key").
const OrderUnknownSQL = `(t.status = 'reconciling' OR (t.status = 'failed' AND NOT EXISTS (
    SELECT 1 FROM dispatch_intents ui WHERE ui.client_order_id = t.client_order_id
      AND ui.outcome IN ('dispatched', 'rejected', 'unsent', 'not_placed', 'key_reused'))))`

const releaseStatusSQL = `SELECT t.status, ` + OrderUnknownSQL + `, t.received_at FROM trace_ids t WHERE t.trace_id = $1 FOR UPDATE`

const releaseSQL = `
WITH del AS (
    DELETE FROM trace_ids WHERE trace_id = $1 AND status <> 'reconciling'
    RETURNING trace_id, status, client_order_id, received_at
)
INSERT INTO trace_events (trace_id, event, detail)
SELECT trace_id, 'released',
       jsonb_build_object('by', $2::text, 'status', status, 'client_order_id', client_order_id,
                          'received_at', received_at)
       || CASE WHEN $3::text IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('reason', $3::text) END
       || CASE WHEN $4::boolean THEN '{"forced": true, "order_unknown": true}'::jsonb ELSE '{}'::jsonb END
FROM del
RETURNING detail->>'status'`

// ReleaseTrace deletes a trace so the same signal can be sent again, and
// audits it with a 'released' event. It takes the claim's advisory lock
// first, so it waits for an attempt in flight instead of deleting a claim
// that is still dispatching. Orders stay: the next execution counts them and
// so gets a new client order ID. It returns the released trace's status, or
// ErrNotFound when no such trace exists.
func ReleaseTrace(ctx context.Context, pool Beginner, p ReleaseParams) (TraceStatus, error) {
	var status TraceStatus
	var unknown bool
	var receivedAt time.Time
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueTraceLock(b, LockKeyOf(p.TraceID), p.LockWait)
		b.Queue(releaseStatusSQL, p.TraceID).QueryRow(func(row pgx.Row) error { return row.Scan(&status, &unknown, &receivedAt) })
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if !p.ReceivedAt.IsZero() && !receivedAt.Equal(p.ReceivedAt) {
			return ErrClaimChanged
		}
		if !status.Releasable() {
			return ErrReconciling
		}
		if unknown && !p.Force {
			return ErrOrderUnknown
		}
		b = &pgx.Batch{}
		b.Queue(releaseSQL, p.TraceID, p.By, nullText(p.Reason), unknown).QueryRow(func(row pgx.Row) error {
			return row.Scan(&status)
		})
		return tx.SendBatch(ctx, b).Close()
	})
	if errors.Is(err, ErrReconciling) || errors.Is(err, ErrOrderUnknown) || errors.Is(err, ErrClaimChanged) {
		return status, fmt.Errorf("release trace %s: %w", p.TraceID, err)
	}
	if err != nil {
		return "", fmt.Errorf("release trace: %w", translate(err))
	}
	return status, nil
}

// OutcomeCounts counts audit events by event name over one window, with the
// share of incoming signals that were repeats.
type OutcomeCounts struct {
	Events map[string]int64
	// DuplicateRatio is (duplicate + key_reused) / (received + duplicate +
	// key_reused): the share of arriving signals that hoox refused to
	// execute again. Zero when nothing arrived.
	DuplicateRatio float64
}

// Stats is the operator's summary of recent traffic and the dedup table.
type Stats struct {
	LastHour   OutcomeCounts
	LastDay    OutcomeCounts
	LiveTraces int64
	// OldestTrace is when the oldest live trace was received; nil with no
	// live traces.
	OldestTrace *time.Time
	Now         time.Time
}

// Admin actions are audited under trace IDs in the admin: namespace, which
// no signal can produce (signal trace IDs start with k:, d:, w: or test:).
const statsEventsSQL = `
SELECT event,
       count(*) FILTER (WHERE at > now() - interval '1 hour') AS last_hour,
       count(*) AS last_day
FROM trace_history
WHERE at > now() - interval '1 day' AND trace_id NOT LIKE 'admin:%'
GROUP BY event`

const statsTracesSQL = `SELECT count(*), min(received_at), now() FROM trace_ids`

// GetStats summarises events over the last hour and day and the live
// trace rows.
func GetStats(ctx context.Context, q DBTX) (Stats, error) {
	s := Stats{
		LastHour: OutcomeCounts{Events: map[string]int64{}},
		LastDay:  OutcomeCounts{Events: map[string]int64{}},
	}
	b := &pgx.Batch{}
	b.Queue(statsEventsSQL).Query(func(rows pgx.Rows) error {
		var event string
		var hour, day int64
		_, err := pgx.ForEachRow(rows, []any{&event, &hour, &day}, func() error {
			if hour > 0 {
				s.LastHour.Events[event] = hour
			}
			s.LastDay.Events[event] = day
			return nil
		})
		return err
	})
	b.Queue(statsTracesSQL).QueryRow(func(row pgx.Row) error {
		return row.Scan(&s.LiveTraces, &s.OldestTrace, &s.Now)
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return Stats{}, fmt.Errorf("stats: %w", translate(err))
	}
	s.LastHour.DuplicateRatio = duplicateRatio(s.LastHour.Events)
	s.LastDay.DuplicateRatio = duplicateRatio(s.LastDay.Events)
	return s, nil
}

func duplicateRatio(ev map[string]int64) float64 {
	repeats := ev[EventDuplicate] + ev[EventKeyReused]
	total := ev[EventReceived] + repeats
	if total == 0 {
		return 0
	}
	return float64(repeats) / float64(total)
}
