package db

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// ErrNotReconciling means a trace was no longer reconciling when a
// resolution tried to settle it: something else settled or removed it.
var ErrNotReconciling = errors.New("trace is not reconciling")

// Resolution is how a reconciling trace ends: its new status, the order when
// one exists at the venue, and the audit event that explains it.
type Resolution struct {
	// Status is dispatched, rejected or failed.
	Status TraceStatus
	// Order is the order found or placed; nil when there is none (failed).
	Order *OrderRow
	// Event is appended to the trace's audit trail.
	Event Event
	// IntentOutcome settles the trace's intent (by the order's client order
	// ID) in the same commit; empty leaves it.
	IntentOutcome IntentOutcome
	// BeforeCommit, when set, runs in the transaction after the writes
	// (to queue the event's notification with it).
	BeforeCommit TxHook
}

// ReconcileState is what a resolution sees of its trace under the lock.
type ReconcileState struct {
	// SentAt is when the intent's order was last sent: a "not found" before
	// SentAt plus the venue's accept window proves nothing. Zero when the
	// trace has no intent (it was reconciling before intents existed).
	SentAt time.Time
	// SentAgo is how long ago SentAt was, and Age how long ago the trace
	// was received, both by Postgres's clock when the trace was locked:
	// the clock that stamped them (a replica's clock is never compared
	// with a Postgres timestamp).
	SentAgo, Age time.Duration
	// KillSwitch is true when trading is halted: nothing may be placed.
	KillSwitch bool
	// Attempts is how many times the intent was armed, read under the
	// lock: a re-send re-arms it only if it still holds that (TouchIntent).
	Attempts int
}

// traceLockSQL serialises everything that settles or removes one trace: it
// is the advisory lock a claim of the trace takes (on the lock key, so every
// window execution of a signal shares it), so a repeat waits for a
// resolution instead of reading a half-settled trace; the row lock taken
// after it makes a concurrent resolution, an admin release or the purge
// (which skips locked rows) wait for or pass over this one.
const traceLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`

// queueTraceLock queues the transaction's timeouts and the trace lock on
// lockKey: the opening of every transaction that settles or removes a trace
// outside its claim (reconcile, sweep, release).
func queueTraceLock(b *pgx.Batch, lockKey string, lockWait time.Duration) {
	queueTxTimeouts(b, lockWait, 0)
	b.Queue(traceLockSQL, lockKey)
}

const reconcileStatusSQL = `
SELECT CASE WHEN t.client_order_id IS NULL OR t.client_order_id = $2 THEN t.status::text ELSE 'superseded' END, i.sent_at, coalesce(i.attempts, 0),
       (extract(epoch FROM clock_timestamp() - i.sent_at) * 1000000)::bigint,
       (extract(epoch FROM clock_timestamp() - t.received_at) * 1000000)::bigint,
       ` + killSwitchEngagedSQL + `
FROM trace_ids t LEFT JOIN dispatch_intents i ON i.client_order_id = $2
WHERE t.trace_id = $1 FOR UPDATE OF t`

// resolveTraceSQL settles the trace only while it is still reconciling
// under this resolution's client order ID; the row lock and
// reconcileStatusSQL already guarantee both, the conditions keep them true
// if the locking ever changes.
const resolveTraceSQL = `
UPDATE trace_ids SET status = $2, order_id = $3, client_order_id = $4, updated_at = now()
WHERE trace_id = $1 AND status = 'reconciling' AND (client_order_id IS NULL OR client_order_id = $4)`

// Reconcile resolves one reconciling trace in one transaction. It locks the
// trace (waiting at most lockWait), and when the trace is still reconciling
// calls decide — which asks the venue — and writes its Resolution: the order
// row, the trace status and the event commit together or not at all. The
// lock is held across decide, so two resolutions of one trace never both
// ask the venue and record.
//
// It returns the status the trace had when locked; decide is called only
// when that is reconciling under clientOrderID. A trace reconciling under
// another client order ID (a later execution, after an operator released
// the key and its resend lost its answer too) is not this resolution's:
// it returns TraceSuperseded and leaves it to its own reconcile — a late
// run of the earlier job (River retries a job its rescuer found stuck)
// would otherwise settle the later execution with the earlier order's
// outcome and lose the later order. A trace that is gone (purged, released) gives
// ErrNotFound. An error from decide rolls back and is returned as is, so the
// caller can tell a venue failure from a database one.
func Reconcile(ctx context.Context, pool *pgxpool.Pool, traceID, clientOrderID string, lockWait time.Duration,
	decide func(ctx context.Context, st ReconcileState) (Resolution, error)) (status TraceStatus, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", translate(err)
	}
	// A no-op after Commit; otherwise it discards everything, even when ctx
	// is already cancelled.
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()

	var st ReconcileState
	var sentAt *time.Time
	var sentAgo *int64
	var age int64
	b := &pgx.Batch{}
	queueTraceLock(b, LockKeyOf(traceID), lockWait)
	b.Queue(reconcileStatusSQL, traceID, clientOrderID).QueryRow(func(row pgx.Row) error {
		return row.Scan(&status, &sentAt, &st.Attempts, &sentAgo, &age, &st.KillSwitch)
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return "", translate(err)
	}
	if status != TraceReconciling {
		return status, nil
	}
	if sentAt != nil {
		st.SentAt, st.SentAgo = *sentAt, time.Duration(*sentAgo)*time.Microsecond
	}
	st.Age = time.Duration(age) * time.Microsecond

	r, err := decide(ctx, st)
	if err != nil {
		return status, err
	}

	var orderID *uuid.UUID
	if r.Order != nil {
		orderID = &r.Order.ID
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
	if r.IntentOutcome != "" {
		b.Queue(SettleIntentSQL, clientOrderID, r.IntentOutcome)
	}
	queueEvents(b, []Event{r.Event})
	return status, commitWith(ctx, tx, b, r.BeforeCommit)
}

// commitWith sends a resolution's writes, runs its hook in the same
// transaction and commits: the order, the settlement, the events and the
// notification the hook queues land together or not at all.
func commitWith(ctx context.Context, tx pgx.Tx, b *pgx.Batch, hook TxHook) error {
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return translate(err)
	}
	if err := runHooks(ctx, tx, []TxHook{hook}); err != nil {
		return err
	}
	return translate(tx.Commit(ctx))
}

// NewOrderRow builds the order row for o as the venue reported it: the one
// shape the gateway and the reconcile worker record, so an adopted order
// looks exactly like one placed in the request.
func NewOrderRow(traceID, exchangeName, mode string, o exchange.Order, r exchange.Report) *OrderRow {
	row := &OrderRow{
		ID: uuid.Must(uuid.NewV7()), TraceID: traceID, ClientOrderID: o.ClientOrderID, Exchange: exchangeName,
		Symbol: o.Symbol, Action: o.Action, Side: o.Side, OrderType: o.OrderType, Quantity: o.Quantity,
		Price: o.Price, Mode: mode, Status: string(r.Status), FillPrice: r.FillPrice, Role: exchange.RolePrimary,
	}
	if r.Side != "" {
		row.Side = r.Side
	}
	// The row stores what was sent (rounded to the venue's steps, under the
	// venue's symbol); the trace and its events keep what was asked.
	if r.Symbol != "" {
		row.Symbol = r.Symbol
	}
	if !r.Quantity.IsZero() {
		row.Quantity = r.Quantity
	}
	if r.Price.Valid {
		row.Price = r.Price
	}
	if r.Status != exchange.StatusRejected {
		// A filled order executed something: a venue (or an older Venue
		// implementation) that reports no executed quantity for one filled
		// all of it.
		filled := r.FilledQuantity
		if r.Status == exchange.StatusFilled && filled.IsZero() {
			filled = row.Quantity
		}
		row.FilledQuantity = decimal.NullDecimal{Decimal: filled, Valid: true}
	}
	if r.AvgPrice.Valid {
		row.AvgPrice = r.AvgPrice
	} else if r.Status == exchange.StatusFilled && r.FillPrice.Valid {
		row.AvgPrice = r.FillPrice
	}
	if !r.Fee.IsZero() || r.FeeAsset != "" {
		row.Fee = decimal.NullDecimal{Decimal: r.Fee, Valid: true}
		if r.FeeAsset != "" {
			asset := r.FeeAsset
			row.FeeAsset = &asset
		}
	}
	if r.ExecutedExit != "" {
		executed := r.ExecutedExit
		row.ExecutedExit = &executed
	}
	if o.Strategy != nil {
		// The signal's strategy, on every venue: a cancel naming one
		// takes only its orders (gateway.cancelTakes).
		strategy := *o.Strategy
		row.Strategy = &strategy
	}
	if o.Ledger != nil {
		// A spot order: its fills count in the strategy's ledger, under
		// the venue's symbol the ledger was read with.
		strategy, base := o.Ledger.Strategy, o.Ledger.BaseAsset
		row.Strategy, row.BaseAsset = &strategy, &base
		if o.Ledger.Symbol != "" {
			row.Symbol = o.Ledger.Symbol
		}
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
	rejected := r.Status == exchange.StatusRejected
	row.TakeProfit = attachedPrice(o.TakeProfit, r.TakeProfit, rejected)
	row.StopLoss = attachedPrice(o.StopLoss, r.StopLoss, rejected)
	row.CallbackRate = r.CallbackRate
	row.TrailingDistance = r.TrailingDistance
	return row
}

// attachedPrice is an on-order exit's trigger price as recorded: what the
// venue reports holding on the order; for a rejected order, which holds
// nothing, the price it was sent with (shown as not placed); null when
// there is none — also when the venue holds an order without it (OKX
// attaches TP/SL only to an order that fills completely).
func attachedPrice(sent *exchange.Attached, held decimal.NullDecimal, rejected bool) decimal.NullDecimal {
	switch {
	case sent == nil:
		return decimal.NullDecimal{}
	case rejected && !held.Valid:
		return sent.Price
	}
	return held
}
