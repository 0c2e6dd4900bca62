package db

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgconv"
)

// Audit events of an order followed to its end (issue 19). Each is written
// on the order's trace when the order changes at the venue.
const (
	// EventOrderPartiallyFilled: a resting order executed part of its
	// quantity and stays open.
	EventOrderPartiallyFilled = "order_partially_filled"
	// EventOrderFilled: the order executed completely.
	EventOrderFilled = "order_filled"
	// EventOrderCancelled: the order was cancelled (FilledQuantity says
	// what executed before).
	EventOrderCancelled = "order_cancelled"
	// EventOrderExpired: the venue ended the order on its own.
	EventOrderExpired = "order_expired"
	// EventOrderRejected: the venue dropped an order it had accepted.
	EventOrderRejected = "order_rejected"
	// EventOrderUnfollowed: an exit still open at its follow horizon is
	// no longer followed (the venue may still hold it).
	EventOrderUnfollowed = "order_unfollowed"
	// EventCancelled: a cancel signal's own outcome (the orders it
	// cancelled), on the cancel signal's trace.
	EventCancelled = "cancelled"
)

// OrderChangeEvent names the audit event for an order that moved to st
// (open: it filled in part).
func OrderChangeEvent(st exchange.Status) string {
	switch st {
	case exchange.StatusFilled:
		return EventOrderFilled
	case exchange.StatusCancelled:
		return EventOrderCancelled
	case exchange.StatusExpired:
		return EventOrderExpired
	case exchange.StatusRejected:
		return EventOrderRejected
	}
	return EventOrderPartiallyFilled
}

// OrderUpdate is what the venue now says about an open order.
type OrderUpdate struct {
	Status         exchange.Status
	FilledQuantity decimal.Decimal
	AvgPrice       decimal.NullDecimal
	FillPrice      decimal.NullDecimal
	Fee            decimal.NullDecimal
	FeeAsset       string
	// CancelledBy is the cancel signal's trace, when one cancelled it.
	CancelledBy string
	// ExecutedExit is, for an OCO exit list, which of its orders executed
	// (exchange.Report.ExecutedExit); empty otherwise.
	ExecutedExit string
	// TakeProfit and StopLoss are the exits the venue reports holding on
	// the order. They replace a primary's recorded ones when it ends
	// cancelled or expired: a venue that drops them with the entry (OKX
	// generates them only on a complete fill) must not leave the row
	// showing a protection the position does not have.
	TakeProfit, StopLoss decimal.NullDecimal
}

// UpdateFromReport is the update for an order the venue reports as r.
func UpdateFromReport(r exchange.Report) OrderUpdate {
	u := OrderUpdate{Status: r.Status, FilledQuantity: r.FilledQuantity, AvgPrice: r.AvgPrice, FillPrice: r.FillPrice,
		FeeAsset: r.FeeAsset, ExecutedExit: r.ExecutedExit, TakeProfit: r.TakeProfit, StopLoss: r.StopLoss}
	if r.Status == exchange.StatusFilled && u.FilledQuantity.IsZero() {
		// As NewOrderRow: a venue that reports no executed quantity for a
		// filled order filled all of it.
		u.FilledQuantity = r.Quantity
	}
	if !u.AvgPrice.Valid && r.Status == exchange.StatusFilled {
		u.AvgPrice = r.FillPrice
	}
	if !u.FillPrice.Valid && r.Status == exchange.StatusFilled {
		u.FillPrice = u.AvgPrice
	}
	if !r.Fee.IsZero() || r.FeeAsset != "" {
		u.Fee = decimal.NullDecimal{Decimal: r.Fee, Valid: true}
	}
	return u
}

// Changes reports whether u says something the row does not: another
// status, more executed, another average price or fee.
func (u OrderUpdate) Changes(row OrderRow) bool {
	return string(u.Status) != row.Status ||
		!u.FilledQuantity.Equal(row.FilledQuantity.Decimal) ||
		u.AvgPrice.Valid && !u.AvgPrice.Decimal.Equal(row.AvgPrice.Decimal) ||
		u.Fee.Valid && !u.Fee.Decimal.Equal(row.Fee.Decimal) ||
		u.ExecutedExit != "" && (row.ExecutedExit == nil || *row.ExecutedExit != u.ExecutedExit)
}

// Detail is the audit detail of the change: the new state and what
// executed.
func (u OrderUpdate) Detail(row OrderRow) map[string]any {
	d := map[string]any{"order_id": row.ID, "client_order_id": row.ClientOrderID, "order_status": string(u.Status),
		"previous_status": row.Status, "filled_quantity": u.FilledQuantity.String(), "quantity": row.Quantity.String()}
	if u.AvgPrice.Valid {
		d["avg_price"] = u.AvgPrice.Decimal.String()
	}
	if u.Fee.Valid {
		d["fee"] = u.Fee.Decimal.String()
		d["fee_asset"] = u.FeeAsset
	}
	if u.CancelledBy != "" {
		d["cancelled_by"] = u.CancelledBy
	}
	if u.ExecutedExit != "" {
		d["executed_exit"] = u.ExecutedExit
	}
	if row.Role != "" && row.Role != exchange.RolePrimary {
		d["role"] = row.Role
	}
	return d
}

// updateOrderSQL writes what the venue says about an order that was open;
// the status condition keeps a final row final whoever raced to it (the
// row lock already serialises the follow job and the cancel action). $2 is
// text (the column is a domain, 00024): typed once, it compares as text too.
const updateOrderSQL = `
UPDATE orders SET status = $2::text, filled_quantity = $3, avg_price = coalesce($4, avg_price),
       fill_price = coalesce($5, fill_price), fee = coalesce($6, fee), fee_asset = coalesce(NULLIF($7, ''), fee_asset),
       cancelled_by = coalesce(NULLIF($8, ''), cancelled_by), executed_exit = coalesce(NULLIF($11, ''), executed_exit),
       updated_at = now(),
       final_at = CASE WHEN $2 <> 'open' THEN now() END,
       take_profit = CASE WHEN role = 'primary' AND $2 IN ('cancelled', 'expired') THEN $9 ELSE take_profit END,
       stop_loss = CASE WHEN role = 'primary' AND $2 IN ('cancelled', 'expired') THEN $10 ELSE stop_loss END
WHERE client_order_id = $1 AND status = 'open'`

// ApplyOrderUpdate writes u to the open order clientOrderID and appends
// events, in q's transaction. It reports false when the row was no longer
// open (nothing written).
func ApplyOrderUpdate(ctx context.Context, q DBTX, clientOrderID string, u OrderUpdate, events []Event) (bool, error) {
	tag, err := q.Exec(ctx, updateOrderSQL, clientOrderID, string(u.Status), pgconv.Numeric(u.FilledQuantity),
		pgconv.NullNumeric(u.AvgPrice), pgconv.NullNumeric(u.FillPrice), pgconv.NullNumeric(u.Fee), u.FeeAsset, u.CancelledBy,
		pgconv.NullNumeric(u.TakeProfit), pgconv.NullNumeric(u.StopLoss), u.ExecutedExit)
	if err != nil {
		return false, translate(err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	b := &pgx.Batch{}
	queueEvents(b, events)
	return true, translate(q.SendBatch(ctx, b).Close())
}

// FollowState is what a follow job sees of its order under the row lock.
type FollowState struct {
	Order OrderRow
	// TraceExists is false once the order's trace was purged or released:
	// the follow horizon (the order is no longer followed).
	TraceExists bool
	// Age is how long ago the order was recorded, by Postgres's clock.
	Age time.Duration
}

// FollowStep is what a follow job decided: the update to write (nil when
// the venue says nothing new), its events, and a hook run in the same
// transaction (the notification).
type FollowStep struct {
	Update *OrderUpdate
	// Unfollow records that the order is no longer followed
	// (orders.unfollowed_at), with Events; with an Update, after it (the
	// last look's change and the unfollow commit together).
	Unfollow     bool
	Events       []Event
	BeforeCommit TxHook
}

const unfollowSQL = `UPDATE orders SET unfollowed_at = now() WHERE client_order_id = $1 AND status = 'open' AND unfollowed_at IS NULL`

const followLockSQL = `SELECT ` + orderColumns + ` FROM orders WHERE client_order_id = $1 FOR UPDATE`

const followTraceSQL = `
SELECT EXISTS (SELECT 1 FROM trace_ids WHERE trace_id = $1),
       (extract(epoch FROM clock_timestamp() - $2::timestamptz) * 1000000)::bigint`

// FollowOrder locks the order clientOrderID (waiting at most lockWait) and,
// while it is open, calls decide — which asks the venue — and writes its
// step in the same transaction: the row, the events and the notification
// commit together or not at all. The row lock is held across decide, so a
// cancel signal and a follow job (or two follow jobs) never record one
// change twice. It returns the state seen; ErrNotFound when no such order
// is recorded.
func FollowOrder(ctx context.Context, pool *pgxpool.Pool, clientOrderID string, lockWait time.Duration,
	decide func(ctx context.Context, st FollowState) (FollowStep, error)) (FollowState, error) {
	var st FollowState
	tx, err := pool.Begin(ctx)
	if err != nil {
		return st, translate(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	b := &pgx.Batch{}
	queueTxTimeouts(b, lockWait, 0)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return st, translate(err)
	}
	rows, _ := tx.Query(ctx, followLockSQL, clientOrderID)
	st.Order, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OrderRow])
	if err != nil {
		return st, translate(err)
	}
	if st.Order.Status != string(exchange.StatusOpen) {
		return st, nil
	}
	var age int64
	if err := tx.QueryRow(ctx, followTraceSQL, st.Order.TraceID, st.Order.CreatedAt).Scan(&st.TraceExists, &age); err != nil {
		return st, translate(err)
	}
	st.Age = time.Duration(age) * time.Microsecond
	step, err := decide(ctx, st)
	if err != nil {
		return st, err
	}
	if step.Unfollow && step.Update == nil {
		b := &pgx.Batch{}
		b.Queue(unfollowSQL, clientOrderID)
		queueEvents(b, step.Events)
		return st, commitWith(ctx, tx, b, step.BeforeCommit)
	}
	if step.Update == nil {
		return st, nil
	}
	if _, err := ApplyOrderUpdate(ctx, tx, clientOrderID, *step.Update, step.Events); err != nil {
		return st, err
	}
	if step.Unfollow {
		// A change seen by the last look (a partial fill), recorded, then
		// no longer followed, in the same commit.
		if _, err := tx.Exec(ctx, unfollowSQL, clientOrderID); err != nil {
			return st, translate(err)
		}
	}
	if err := runHooks(ctx, tx, []TxHook{step.BeforeCommit}); err != nil {
		return st, err
	}
	return st, translate(tx.Commit(ctx))
}

// openOrdersSQL lists the open orders of one venue and mode, oldest
// first (orders_open_idx): the candidates of a cancel signal, whose symbol
// the caller compares in the venue's spellings.
const openOrdersSQL = `SELECT ` + orderColumns + `
FROM orders WHERE exchange = $1 AND mode = $2 AND status = 'open'
ORDER BY created_at, id`

// lockOrdersSQL locks the chosen orders that are still open.
const lockOrdersSQL = `SELECT ` + orderColumns + `
FROM orders WHERE client_order_id = ANY($1) AND status = 'open'
ORDER BY created_at, id FOR UPDATE`

// LockOpenOrders returns, locked in q's transaction until it ends, the open
// orders hoox recorded at exchangeName in mode that keep says to take (the
// cancel signal's symbol). Only the orders taken are locked, so the follow
// jobs of other symbols go on.
func LockOpenOrders(ctx context.Context, q DBTX, exchangeName, mode string, keep func(OrderRow) bool) ([]OrderRow, error) {
	rows, _ := q.Query(ctx, openOrdersSQL, exchangeName, mode)
	all, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
	if err != nil {
		return nil, translate(err)
	}
	var ids []string
	for _, o := range all {
		if keep(o) {
			ids = append(ids, o.ClientOrderID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, _ = q.Query(ctx, lockOrdersSQL, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
	return out, translate(err)
}

const cancelledBySQL = `SELECT ` + orderColumns + ` FROM orders WHERE cancelled_by = $1 ORDER BY created_at, id`

// OrdersCancelledBy lists the orders the cancel signal traceID cancelled,
// for its answer and its repeats.
func OrdersCancelledBy(ctx context.Context, q DBTX, traceID string) ([]OrderRow, error) {
	rows, _ := q.Query(ctx, cancelledBySQL, traceID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
	return out, translate(err)
}

const orderByClientIDSQL = `SELECT ` + orderColumns + ` FROM orders WHERE client_order_id = $1`

// GetOrder reads the order recorded under clientOrderID; ErrNotFound when
// none is.
func GetOrder(ctx context.Context, q DBTX, clientOrderID string) (OrderRow, error) {
	rows, _ := q.Query(ctx, orderByClientIDSQL, clientOrderID)
	o, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[OrderRow])
	return o, translate(err)
}
