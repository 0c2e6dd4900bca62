package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/exchange"
)

// ErrNotReconciling means a trace was no longer reconciling when a
// resolution tried to settle it: something else settled or removed it.
var ErrNotReconciling = errors.New("trace is not reconciling")

// Resolution is how a reconciling trace ends: its new status, the order when
// one exists at the venue, and the audit event that explains it.
type Resolution struct {
	// Status is dispatched, rejected or failed.
	Status string
	// Order is the order found or placed; nil when there is none (failed).
	Order *OrderRow
	// Event is appended to the trace's audit trail.
	Event Event
}

// reconcileLockSQL serialises resolutions of one trace: the advisory lock is
// the one a claim of the same (non-window) trace takes, so a repeat waits
// for the resolution instead of reading a half-settled trace, and the row
// lock makes a concurrent resolution, an admin release or the purge (which
// skips locked rows) wait for or pass over this one.
const reconcileLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

const reconcileStatusSQL = `SELECT status FROM trace_ids WHERE trace_id = $1 FOR UPDATE`

// resolveTraceSQL settles the trace only while it is still reconciling; the
// row lock already guarantees it, the condition keeps it true if the locking
// ever changes.
const resolveTraceSQL = `
UPDATE trace_ids SET status = $2, order_id = $3, client_order_id = $4, updated_at = now()
WHERE trace_id = $1 AND status = 'reconciling'`

// Reconcile resolves one reconciling trace in one transaction. It locks the
// trace (waiting at most lockWait), and when the trace is still reconciling
// calls decide — which asks the venue — and writes its Resolution: the order
// row, the trace status and the event commit together or not at all. The
// lock is held across decide, so two resolutions of one trace never both
// ask the venue and record.
//
// It returns the status the trace had when locked; decide is called only
// when that is reconciling. A trace that is gone (purged, released) gives
// ErrNotFound. An error from decide rolls back and is returned as is, so the
// caller can tell a venue failure from a database one.
func Reconcile(ctx context.Context, pool *pgxpool.Pool, traceID string, lockWait time.Duration,
	decide func(ctx context.Context) (Resolution, error)) (status string, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", translate(err)
	}
	// A no-op after Commit; otherwise it discards everything, even when ctx
	// is already cancelled.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	b := &pgx.Batch{}
	b.Queue("SELECT set_config('lock_timeout', $1, true)", fmt.Sprintf("%dms", max(lockWait.Milliseconds(), 1)))
	b.Queue(reconcileLockSQL, traceID)
	b.Queue(reconcileStatusSQL, traceID).QueryRow(func(row pgx.Row) error { return row.Scan(&status) })
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return "", translate(err)
	}
	if status != TraceReconciling {
		return status, nil
	}

	r, err := decide(ctx)
	if err != nil {
		return status, err
	}

	var orderID *uuid.UUID
	var clientOrderID *string
	if r.Order != nil {
		orderID, clientOrderID = &r.Order.ID, &r.Order.ClientOrderID
	}
	tag, err := tx.Exec(ctx, resolveTraceSQL, traceID, r.Status, orderID, clientOrderID)
	if err != nil {
		return status, translate(err)
	}
	if tag.RowsAffected() == 0 {
		return status, ErrNotReconciling
	}
	b = &pgx.Batch{}
	if r.Order != nil {
		queueOrder(b, r.Order)
	}
	queueEvents(b, []Event{r.Event})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return status, translate(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return status, translate(err)
	}
	return status, nil
}

// NewOrderRow builds the order row for o as the venue reported it: the one
// shape the gateway and the reconcile worker record, so an adopted order
// looks exactly like one placed in the request.
func NewOrderRow(traceID, exchangeName, mode string, o exchange.Order, r exchange.Report) *OrderRow {
	row := &OrderRow{
		ID: uuid.Must(uuid.NewV7()), TraceID: traceID, ClientOrderID: o.ClientOrderID, Exchange: exchangeName,
		Symbol: o.Symbol, Action: o.Action, Side: o.Side, OrderType: o.OrderType, Quantity: o.Quantity,
		Price: o.Price, Mode: mode, Status: string(r.Status), FillPrice: r.FillPrice,
	}
	if r.Side != "" {
		row.Side = r.Side
	}
	if o.Leverage > 0 {
		l := int32(o.Leverage)
		row.Leverage = &l
	}
	if r.ExchangeOrderID != "" {
		id := r.ExchangeOrderID
		row.ExchangeOrderID = &id
	}
	if r.Reason != "" {
		reason := r.Reason
		row.RejectReason = &reason
	}
	return row
}
