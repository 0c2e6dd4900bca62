package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgconv"
)

// Leg is one follow-up order of a trace (issue 19), as order_legs holds
// it: planned once in its primary order's intent, given its row when the
// primary is recorded filled, or an exit's when the primary ends cancelled
// or expired after a partial fill (triggers on orders, migrations 00013,
// 00015, 00018), and its own intent from then on — Sent is made durable
// before each send, Outcome once its order is recorded.
type Leg struct {
	ClientOrderID       string
	ParentClientOrderID string
	Seq                 int
	Role                string
	TraceID             string
	LockKey             string
	Exchange            string
	Mode                string
	Order               exchange.Order
	// Sent is true once an attempt may have sent the leg's order: a
	// retry looks it up before anything else.
	Sent bool
	// SentAgo is how long ago it was last sent, by Postgres's clock.
	SentAgo  time.Duration
	Attempts int
	// Sends is how many of its Attempts may have reached the venue: the
	// armings not proven unsent (MarkLegUnsent).
	Sends int
	// Outcome is empty while the leg is open.
	Outcome IntentOutcome
	// CancelledBy is the trace of the cancel signal that came while the
	// leg (an exit) may have been sent or was failed with its order
	// unknown (MarkCancelledExitLegs), or of the close that left the
	// position it protected gone meanwhile (MarkClosedExitLegs): it is
	// never sent again, only looked up and cancelled at the venue if
	// found. Empty otherwise.
	CancelledBy string
}

const legColumns = `client_order_id, parent_client_order_id, seq, role, trace_id, lock_key, exchange, mode, order_spec,
       sent_at IS NOT NULL, coalesce((extract(epoch FROM clock_timestamp() - sent_at) * 1000000)::bigint, 0),
       attempts, attempts - unsent, coalesce(outcome, ''), coalesce(cancelled_by, '')`

func scanLeg(row pgx.Row) (Leg, error) {
	var l Leg
	var spec []byte
	var sentAgo int64
	err := row.Scan(&l.ClientOrderID, &l.ParentClientOrderID, &l.Seq, &l.Role, &l.TraceID, &l.LockKey, &l.Exchange,
		&l.Mode, &spec, &l.Sent, &sentAgo, &l.Attempts, &l.Sends, &l.Outcome, &l.CancelledBy)
	if err != nil {
		return Leg{}, err
	}
	l.SentAgo = time.Duration(sentAgo) * time.Microsecond
	if err := json.Unmarshal(spec, &l.Order); err != nil {
		return Leg{}, fmt.Errorf("leg %s: decode order: %w", l.ClientOrderID, err)
	}
	return l, nil
}

// LegsTx is one pass over a primary order's legs under its trace's lock:
// the same advisory lock a claim, a reconcile and the sweeper take, so at
// most one party places a trace's legs at a time.
type LegsTx struct {
	tx pgx.Tx
}

// LockLegs begins a transaction, takes the advisory lock of lockKey
// (waiting at most lockWait, else ErrLockTimeout) and reads the legs of
// the order placed under parent, in plan order. The advisory lock, not a
// row lock, keeps other parties out: MarkLegSent updates a leg's row from
// another connection while the pass holds the lock. idle bounds
// how long the transaction may sit idle while a venue call runs.
func LockLegs(ctx context.Context, pool *pgxpool.Pool, lockKey, parent string, lockWait, idle time.Duration) (*LegsTx, []Leg, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, nil, translate(err)
	}
	var legs []Leg
	b := &pgx.Batch{}
	queueTxTimeouts(b, lockWait, idle)
	b.Queue(traceLockSQL, lockKey)
	b.Queue(`SELECT `+legColumns+` FROM order_legs WHERE parent_client_order_id = $1 ORDER BY seq`, parent).
		Query(func(rows pgx.Rows) error {
			var err error
			legs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Leg, error) { return scanLeg(row) })
			return err
		})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		_ = tx.Rollback(context.WithoutCancel(ctx))
		return nil, nil, translate(err)
	}
	return &LegsTx{tx: tx}, legs, nil
}

// InsertLegOrderSQL records a leg's order with its role, what it executed
// (average price, fee), for a part of a spot close the strategy and base
// asset its fills count under in the spot ledger, and the cancel signal
// that cancelled it (an exit found at the venue after a cancel).
const InsertLegOrderSQL = `
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price,
                    leverage, mode, status, exchange_order_id, fill_price, reject_reason, filled_quantity, role,
                    take_profit, stop_loss, avg_price, fee, fee_asset, strategy, base_asset, callback_rate,
                    trailing_distance, executed_exit, cancelled_by)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
        $21, $22, $23, $24, $25, $26, $27, $28, $29)
RETURNING created_at`

// settleLegSQL settles the leg $1 with outcome $2, only while its outcome
// is still $3 as the pass read it under the lock (empty for an open leg,
// 'failed' for one whose order is unknown and that the sweeper asked about
// again: ListUnknownLegs).
const settleLegSQL = `
UPDATE order_legs SET outcome = $2, settled_at = now() WHERE client_order_id = $1 AND coalesce(outcome, '') = $3`

// Settle records leg's order (when the venue holds or refused one: row
// not nil) with outcome and events, and commits. The transaction is over
// afterwards, whatever the error.
func (t *LegsTx) Settle(ctx context.Context, leg Leg, row *OrderRow, outcome IntentOutcome, events []Event) error {
	return t.SettleWith(ctx, leg, row, outcome, events, nil)
}

// SettleWith is Settle running hook (may be nil) in the same transaction
// before the commit: the follow job of an exit recorded open, or the
// notification of a refused leg, is queued with its record.
func (t *LegsTx) SettleWith(ctx context.Context, leg Leg, row *OrderRow, outcome IntentOutcome, events []Event, hook TxHook) error {
	b := &pgx.Batch{}
	queueSettleLeg(b, leg, row, outcome, events)
	return t.end(ctx, b, hook)
}

// queueSettleLeg queues Settle's writes: leg's order row (when not nil),
// its outcome, and events.
func queueSettleLeg(b *pgx.Batch, leg Leg, row *OrderRow, outcome IntentOutcome, events []Event) {
	if row != nil {
		row.Role = leg.Role
		b.Queue(InsertLegOrderSQL, pgconv.UUID(row.ID), row.TraceID, row.ClientOrderID, row.Exchange, row.Symbol, row.Action,
			row.Side, row.OrderType, pgconv.Numeric(row.Quantity), pgconv.NullNumeric(row.Price), row.Leverage, row.Mode,
			row.Status, row.ExchangeOrderID, pgconv.NullNumeric(row.FillPrice), row.RejectReason,
			pgconv.NullNumeric(row.FilledQuantity), row.Role, pgconv.NullNumeric(row.TakeProfit), pgconv.NullNumeric(row.StopLoss),
			pgconv.NullNumeric(row.AvgPrice), pgconv.NullNumeric(row.Fee), row.FeeAsset, row.Strategy, row.BaseAsset,
			pgconv.NullNumeric(row.CallbackRate), pgconv.NullNumeric(row.TrailingDistance), row.ExecutedExit, row.CancelledBy).
			QueryRow(func(r pgx.Row) error { return r.Scan(&row.CreatedAt) })
	}
	b.Queue(settleLegSQL, leg.ClientOrderID, outcome, string(leg.Outcome))
	queueEvents(b, events)
}

// Commit ends the pass, writing events (may be none) first.
func (t *LegsTx) Commit(ctx context.Context, events ...Event) error {
	b := &pgx.Batch{}
	queueEvents(b, events)
	return t.end(ctx, b, nil)
}

// MarkAsked records that the sweeper asked the venue about leg, failed
// with its order unknown, and learned nothing that settles it: its
// settled_at is refreshed so ListUnknownLegs lists it again only after the
// others. It commits; the transaction is over afterwards.
func (t *LegsTx) MarkAsked(ctx context.Context, leg Leg) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE order_legs SET settled_at = now() WHERE client_order_id = $1 AND outcome = 'failed'`, leg.ClientOrderID)
	return t.end(ctx, b, nil)
}

// MarkAnswered is MarkAsked for an ask the venue answered without
// deciding anything (not found where that proves nothing): its asked_at
// is set too, which spaces the leg's next asks (legUnknownDue). An ask
// the venue did not answer is MarkAsked: an outage never delays the ask
// after it.
func (t *LegsTx) MarkAnswered(ctx context.Context, leg Leg) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE order_legs SET settled_at = now(), asked_at = now() WHERE client_order_id = $1 AND outcome = 'failed'`, leg.ClientOrderID)
	return t.end(ctx, b, nil)
}

// Reopen makes a leg settled failed (unknown) open again, with ev, and
// ends the pass: its venue could not be asked for a while (the leg runner
// gave it up) and now shows no order under its ID at a venue where sending
// it again under that ID is safe, so the next pass sends it. A leg a
// cancel signal marked (CancelledBy) stays failed.
func (t *LegsTx) Reopen(ctx context.Context, leg Leg, ev Event) error {
	b := &pgx.Batch{}
	b.Queue(`UPDATE order_legs SET outcome = NULL, settled_at = NULL, asked_at = NULL
WHERE client_order_id = $1 AND outcome = 'failed' AND cancelled_by IS NULL`, leg.ClientOrderID)
	queueEvents(b, []Event{ev})
	return t.end(ctx, b, nil)
}

// end sends b and hook's writes, commits, and ends the pass.
func (t *LegsTx) end(ctx context.Context, b *pgx.Batch, hook TxHook) error {
	err := commitWith(ctx, t.tx, b, hook)
	t.Rollback(ctx)
	return err
}

// Rollback ends the pass without writing; safe after Settle or Commit.
func (t *LegsTx) Rollback(ctx context.Context) {
	_ = t.tx.Rollback(context.WithoutCancel(ctx))
}

// markLegSentSQL arms the leg $1 with the order as it will be sent ($2)
// and appends its event ($4–$6: trace ID, event, detail), only while the
// leg is still as the pass read it under the trace's lock: open, armed $3
// times, and not marked by a cancel signal (MarkCancelledExitLegs). A leg
// armed since by another pass (one that took the lock
// after this pass's session, and the lock with it, was lost) is not
// touched, and no event is written.
//
// Nothing is armed while the kill switch is engaged (DESIGN: it "halts
// every placement"), read in the same statement: the first column says so,
// the second whether the leg was armed.
const markLegSentSQL = `
WITH ks AS (
    SELECT ` + killSwitchEngagedSQL + ` AS engaged
), u AS (
    UPDATE order_legs SET sent_at = now(), attempts = attempts + 1, order_spec = $2, arm_id = $7
    WHERE client_order_id = $1 AND outcome IS NULL AND attempts = $3 AND cancelled_by IS NULL
      AND NOT (SELECT engaged FROM ks)
    RETURNING 1
), ev AS (
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT $4, $5, $6::jsonb FROM u
)
SELECT (SELECT engaged FROM ks), EXISTS (SELECT 1 FROM u)`

// MarkLegSent makes durable, before the leg's order is sent (again), that
// it may exist at the venue, and the order as it will be sent (leg.Order:
// an exit's target resolved from the entry's fill, once — every later
// pass reads it back): a synchronous commit on its own connection (pool,
// not the pass's transaction, which commits only after the venue answers),
// with its leg_started event. It arms the leg only if it is still open and
// armed leg.Attempts times, as the pass read it under the trace's lock;
// otherwise it writes nothing and returns ErrIntentConsumed: the leg is
// settled, or another pass armed it (and may have sent it) after this
// pass's session, and with it the lock, was lost — Binance keeps a client
// order ID unique only among open orders, so sending it again could place
// a second exit. The caller must not send then; once armed, the leg holds
// leg.Attempts+1 under armID (NewArmID: the arming's own, which
// MarkLegUnsent names). While the kill switch is engaged it arms nothing
// and returns ErrKillSwitch: the leg stays as it is, for a pass after the
// release.
func MarkLegSent(ctx context.Context, pool *pgxpool.Pool, leg Leg, armID int64) error {
	spec, err := json.Marshal(leg.Order)
	if err != nil {
		return fmt.Errorf("encode leg %s: %w", leg.ClientOrderID, err)
	}
	detail := map[string]any{"client_order_id": leg.ClientOrderID, "role": leg.Role, "seq": leg.Seq}
	halted, armed := false, false
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(SyncCommitSQL)
	b.Queue(markLegSentSQL, leg.ClientOrderID, spec, leg.Attempts, leg.TraceID, EventLegStarted, detail, armID).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&halted, &armed)
		})
	if err := sendTx(ctx, pool, b); err != nil {
		return err
	}
	if halted {
		return fmt.Errorf("leg %s: %w", leg.ClientOrderID, ErrKillSwitch)
	}
	if !armed {
		return fmt.Errorf("leg %s: %w", leg.ClientOrderID, ErrIntentConsumed)
	}
	return nil
}

// MarkLegUnsent records that the leg's last send provably never reached
// the venue (exchange.ErrUnreachable): it is planned again, and the next
// pass sends it without a lookup. armed and armID name the arming this
// pass's MarkLegSent made (or tried to: its write may have failed with the
// outcome unknown): a pass that lost its lock must not clear the send of
// the pass that armed the leg after it, or in its stead, having read the
// leg armed the same number of times (the next pass would send that one's
// order again without a lookup). The leg is left as it is, and
// ErrIntentConsumed returned, when it is settled or armed by another.
func MarkLegUnsent(ctx context.Context, pool *pgxpool.Pool, clientOrderID string, armed int, armID int64) error {
	cleared := false
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(SyncCommitSQL)
	b.Queue(`UPDATE order_legs SET sent_at = NULL, unsent = unsent + 1
WHERE client_order_id = $1 AND outcome IS NULL AND attempts = $2 AND arm_id = $3`,
		clientOrderID, armed, armID).Exec(func(ct pgconn.CommandTag) error {
		cleared = ct.RowsAffected() == 1
		return nil
	})
	if err := sendTx(ctx, pool, b); err != nil {
		return err
	}
	if !cleared {
		return fmt.Errorf("leg %s: %w", clientOrderID, ErrIntentConsumed)
	}
	return nil
}

// OpenLegs names a primary order with legs still open.
type OpenLegs struct {
	ParentClientOrderID string
	LockKey             string
	TraceID             string
}

// ListOpenLegs returns at most limit primaries whose open legs were
// planned or last sent longer than grace ago: legs an attempt left
// unplaced or unknown when it died, for the sweeper to finish. Primaries
// with a leg not sent yet come first: a sent leg may wait on a venue that
// cannot be asked (until the leg runner gives it up), and a batch of those
// must not keep a planned exit from ever being placed.
func ListOpenLegs(ctx context.Context, q DBTX, grace time.Duration, limit int) ([]OpenLegs, error) {
	rows, err := q.Query(ctx, `
SELECT parent_client_order_id, min(lock_key), min(trace_id)
FROM order_legs
WHERE outcome IS NULL AND coalesce(sent_at, created_at) < now() - $1::bigint * interval '1 millisecond'
GROUP BY parent_client_order_id
ORDER BY bool_or(sent_at IS NULL) DESC, min(created_at)
LIMIT $2`, grace.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("list open legs: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (OpenLegs, error) {
		var o OpenLegs
		err := row.Scan(&o.ParentClientOrderID, &o.LockKey, &o.TraceID)
		return o, err
	})
	if err != nil {
		return nil, fmt.Errorf("list open legs: %w", translate(err))
	}
	return out, nil
}

// unknownLegsSQL lists legs failed with their order unknown, least
// recently asked first (settled_at is refreshed on each ask that settles
// nothing: LegsTx.MarkAsked), from order_legs_unknown_idx (migration
// 00039), each only when due (legUnknownDue).
const unknownLegsSQL = `
SELECT ` + legColumns + `
FROM order_legs
WHERE outcome = 'failed' AND settled_at < now() - $1::bigint * interval '1 millisecond'
  AND ` + legUnknownDue + `
ORDER BY settled_at
LIMIT $2`

// legUnknownDue is intentUnknownDue for a leg (asked_at set by
// LegsTx.MarkAnswered; a failed leg was sent, else its creation counts).
const legUnknownDue = `(asked_at IS NULL OR asked_at < now() - least(greatest((asked_at - coalesce(sent_at, created_at)) / 4,
         $1::bigint * interval '1 millisecond'), interval '1 hour'))`

// ListUnknownLegs returns at most limit legs that ended failed with their
// order unknown (sent, never seen at a venue that may still book a late
// request, or sent too often and never seen) and were not asked about for
// every, so the sweeper can record the order if it turns up (README "A
// missed trade"), as ListUnknown does for the primaries.
func ListUnknownLegs(ctx context.Context, q DBTX, every time.Duration, limit int) ([]Leg, error) {
	rows, err := q.Query(ctx, unknownLegsSQL, every.Milliseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("list unknown legs: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Leg, error) { return scanLeg(row) })
	if err != nil {
		return nil, fmt.Errorf("list unknown legs: %w", translate(err))
	}
	return out, nil
}

// LegOrders reads the recorded orders of the legs of the order placed
// under parent, in plan order.
func LegOrders(ctx context.Context, q DBTX, parent string) ([]OrderRow, error) {
	rows, err := q.Query(ctx, `SELECT `+orderColumns+` FROM orders
WHERE client_order_id IN (SELECT client_order_id FROM order_legs WHERE parent_client_order_id = $1)
ORDER BY (SELECT seq FROM order_legs l WHERE l.client_order_id = orders.client_order_id)`, parent)
	if err != nil {
		return nil, fmt.Errorf("leg orders: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
	if err != nil {
		return nil, fmt.Errorf("leg orders: %w", translate(err))
	}
	return out, nil
}

// GetLegOrder reads the order a leg was sent as (order_legs.order_spec: an
// exit's resolved target and its Exit role included), by the leg's client
// order ID, or ErrNotFound when no leg has it.
func GetLegOrder(ctx context.Context, q DBTX, clientOrderID string) (exchange.Order, error) {
	var spec []byte
	err := q.QueryRow(ctx, `SELECT order_spec FROM order_legs WHERE client_order_id = $1`, clientOrderID).Scan(&spec)
	if err != nil {
		return exchange.Order{}, fmt.Errorf("leg %s: %w", clientOrderID, translate(err))
	}
	var o exchange.Order
	if err := json.Unmarshal(spec, &o); err != nil {
		return exchange.Order{}, fmt.Errorf("leg %s: decode order: %w", clientOrderID, err)
	}
	return o, nil
}

// ParentFill is what a leg's primary order executed, as recorded.
type ParentFill struct {
	Side           string
	FillPrice      decimal.NullDecimal
	FilledQuantity decimal.NullDecimal
	// Fee is what the venue charged the order so far, in FeeAsset ("" when
	// none is recorded): a spot buy charged in the coin it bought received
	// that much less.
	Fee      decimal.NullDecimal
	FeeAsset string
	// RecordedAgo is how long ago the order's row last changed (its fill
	// recorded), by Postgres's clock.
	RecordedAgo time.Duration
}

// ParentOrderFill reads the recorded fill of the order placed under
// parent: an exit leg's quantity and percent target come from it. The fill
// price is the average price when no fill price is recorded: an entry
// cancelled or expired after a partial fill has only its average (issue 19,
// migration 00018).
func ParentOrderFill(ctx context.Context, q DBTX, parent string) (ParentFill, error) {
	var p ParentFill
	var ago int64
	err := q.QueryRow(ctx, `SELECT coalesce(side, ''), coalesce(fill_price, avg_price), filled_quantity, fee, coalesce(fee_asset, ''),
       (extract(epoch FROM clock_timestamp() - coalesce(updated_at, created_at)) * 1000000)::bigint
FROM orders WHERE client_order_id = $1`, parent).
		Scan(&p.Side, &p.FillPrice, &p.FilledQuantity, &p.Fee, &p.FeeAsset, &ago)
	if err != nil {
		return ParentFill{}, fmt.Errorf("fill of order %s: %w", parent, translate(err))
	}
	p.RecordedAgo = time.Duration(ago) * time.Microsecond
	return p, nil
}

// OpenLegsLockKey returns the lock key of the open legs of the order
// placed under parent, and false when it has none: a follow job that just
// recorded the order filled (which planned its legs) places them at once.
func OpenLegsLockKey(ctx context.Context, q DBTX, parent string) (string, bool, error) {
	var key string
	err := q.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1 AND outcome IS NULL LIMIT 1`, parent).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("open legs of %s: %w", parent, translate(err))
	}
	return key, true, nil
}

// openSiblingExitsSQL lists the other exits of the entry whose exit $1 is,
// still open: the orders of its parent's legs with an exit role.
const openSiblingExitsSQL = `SELECT ` + orderColumns + ` FROM orders
WHERE status = 'open' AND client_order_id <> $1
  AND role IN ` + exitRolesSQL + `
  AND client_order_id IN (SELECT client_order_id FROM order_legs
                          WHERE parent_client_order_id = (SELECT parent_client_order_id FROM order_legs WHERE client_order_id = $1))
ORDER BY created_at, id`

// OpenSiblingExits returns the exits of the same entry as the exit leg
// clientOrderID that are still open (none for an order that is no leg):
// once one exit of a position filled, the others protect nothing.
func OpenSiblingExits(ctx context.Context, q DBTX, clientOrderID string) ([]OrderRow, error) {
	rows, _ := q.Query(ctx, openSiblingExitsSQL, clientOrderID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[OrderRow])
	if err != nil {
		return nil, fmt.Errorf("open sibling exits of %s: %w", clientOrderID, translate(err))
	}
	return out, nil
}

// filledSiblingExitSQL names an exit of the same entry as the exit $1
// that is recorded filled.
const filledSiblingExitSQL = `SELECT client_order_id FROM orders
WHERE status = 'filled' AND client_order_id <> $1 AND role IN ('take_profit', 'stop_loss', 'trailing_stop')
  AND client_order_id IN (SELECT client_order_id FROM order_legs
                          WHERE parent_client_order_id = (SELECT parent_client_order_id FROM order_legs WHERE client_order_id = $1))
ORDER BY final_at LIMIT 1`

// FilledSiblingExit returns the client order ID of another exit of the
// same entry as the exit leg clientOrderID that is recorded filled, or ""
// when none is: an exit still open beside it protects nothing.
func FilledSiblingExit(ctx context.Context, q DBTX, clientOrderID string) (string, error) {
	var id string
	err := q.QueryRow(ctx, filledSiblingExitSQL, clientOrderID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("filled sibling exit of %s: %w", clientOrderID, translate(err))
	}
	return id, nil
}

// ExitParent is the entry an exit leg protects, as a cancel signal
// chooses the exits it stops by it (DropUnsentExitLegs,
// MarkCancelledExitLegs).
type ExitParent struct {
	// Symbol is the entry's symbol in the venue's spelling.
	Symbol string
	// ClientOrderID is the entry's client order ID.
	ClientOrderID string
	// Strategy is the entry's recorded strategy (orders.strategy, "" for
	// a signal without one); nil on an entry recorded without one.
	Strategy *string
	// ExitRole is the role of the exit leg itself (exchange.RoleStopLoss,
	// …): a cancel naming a strategy keeps a setting of the position that
	// another strategy shares.
	ExitRole string
}

// unsentExitLegsSQL lists the exit legs of venue $1 and mode $2 that are
// open and were never sent (or provably never reached the venue), with
// the symbol and strategy of the entry they protect and their role.
const unsentExitLegsSQL = `SELECT l.client_order_id, l.lock_key, o.symbol, l.parent_client_order_id, o.strategy, l.role FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
WHERE l.outcome IS NULL AND l.sent_at IS NULL AND l.exchange = $1 AND l.mode = $2
  AND l.role IN ` + exitRolesSQL + `
ORDER BY l.created_at, l.client_order_id`

// dropUnsentExitLegsSQL settles the legs $1 not_placed, each only while it
// is still open and unsent: a pass that armed it first (MarkLegSent, whose
// update waits for this one's row lock, or this one for its commit) keeps
// it. A leg_failed event on the entry's trace names the cancel signal $2.
const dropUnsentExitLegsSQL = `
WITH u AS (
    UPDATE order_legs SET outcome = 'not_placed', settled_at = now()
    WHERE client_order_id = ANY($1) AND outcome IS NULL AND sent_at IS NULL
    RETURNING *
), ev AS (
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT trace_id, 'leg_failed',
           jsonb_build_object('client_order_id', client_order_id, 'role', role, 'seq', seq,
                              'parent_client_order_id', parent_client_order_id, 'cancelled_by', $2::text,
                              'reason', 'the cancel signal ' || $2::text || ' came before this exit was placed: '
                                        || 'a cancel leaves no hoox order it is for resting, so it is not placed')
    FROM u
)
SELECT ` + legColumns + ` FROM u ORDER BY parent_client_order_id, seq`

// exitLegsKept runs query (unsentExitLegsSQL, exitLegsToCancelSQL: a
// leg's client order ID, its trace's lock key and its entry, of venue
// exchangeName and mode) and returns the IDs and lock keys of the legs
// whose entry keep accepts.
func exitLegsKept(ctx context.Context, q DBTX, query, exchangeName, mode string, keep func(ExitParent) bool) (ids, keys []string, err error) {
	rows, _ := q.Query(ctx, query, exchangeName, mode)
	type candidate struct {
		id, lockKey string
		parent      ExitParent
	}
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
		var c candidate
		err := row.Scan(&c.id, &c.lockKey, &c.parent.Symbol, &c.parent.ClientOrderID, &c.parent.Strategy, &c.parent.ExitRole)
		return c, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("exit legs: %w", translate(err))
	}
	for _, c := range all {
		if keep(c.parent) {
			ids, keys = append(ids, c.id), append(keys, c.lockKey)
		}
	}
	return ids, keys, nil
}

// DropUnsentExitLegs settles not_placed, in q (the cancel signal
// cancelledBy's claim transaction), the open exit legs of venue
// exchangeName and mode that no pass has sent yet and whose entry keep
// accepts (the cancel's symbol, and its strategy when it names one), each
// with a leg_failed event naming the cancel, and returns them. A cancel
// leaves none of the hoox orders it is for resting (migration 00018): an exit still planned — its entry filled, its first
// send never reached the venue — would otherwise be placed by the sweeper
// after it. An exit already armed (sent_at set) may rest at the venue
// under its ID and is left to its pass.
func DropUnsentExitLegs(ctx context.Context, q DBTX, exchangeName, mode string, keep func(ExitParent) bool, cancelledBy string) ([]Leg, error) {
	ids, _, err := exitLegsKept(ctx, q, unsentExitLegsSQL, exchangeName, mode, keep)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	rows, _ := q.Query(ctx, dropUnsentExitLegsSQL, ids, cancelledBy)
	legs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Leg, error) { return scanLeg(row) })
	if err != nil {
		return nil, fmt.Errorf("drop unsent exit legs: %w", translate(err))
	}
	return legs, nil
}

// exitLegsToCancelSQL lists the exit legs of venue $1 and mode $2 that a
// cancel may still have to stop — open (sent or not) or failed with their
// order unknown, not marked by a cancel yet — with their trace's lock key
// and the symbol and strategy of the entry they protect, and their role.
const exitLegsToCancelSQL = `SELECT l.client_order_id, l.lock_key, o.symbol, l.parent_client_order_id, o.strategy, l.role FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
WHERE (l.outcome IS NULL OR l.outcome = 'failed') AND l.cancelled_by IS NULL AND l.exchange = $1 AND l.mode = $2
  AND l.role IN ` + exitRolesSQL + `
ORDER BY l.created_at, l.client_order_id`

// lockLegTracesSQL takes the trace locks $1 (lock keys), in one order so
// two cancels never wait on each other, under the transaction's
// lock_timeout.
const lockLegTracesSQL = `SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0)))
FROM (SELECT DISTINCT k FROM unnest($1::text[]) AS k ORDER BY k) keys`

// markCancelledExitLegsSQL marks the legs $1 cancelled by the cancel signal
// $2, each only while it may still rest at the venue or be sent: armed and
// open, or failed with its order unknown. A leg_cancelled event on the
// entry's trace names the cancel.
var markCancelledExitLegsSQL = markExitLegsSQL(`'the cancel signal ' || $2::text || ' came after this exit may have been sent: '
                                        || 'it is not sent again, and cancelled at the venue if it is found there'`)

// markExitLegsSQL marks the legs $1 as ended by the signal $2 (its trace),
// each only while it may still rest at the venue or be sent: armed and
// open, or failed with its order unknown; a leg_cancelled event on the
// entry's trace gives reason (an SQL text expression).
func markExitLegsSQL(reason string) string {
	return `
WITH u AS (
    UPDATE order_legs SET cancelled_by = $2
    WHERE client_order_id = ANY($1) AND cancelled_by IS NULL
      AND ((outcome IS NULL AND sent_at IS NOT NULL) OR outcome = 'failed')
    RETURNING *
), ev AS (
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT trace_id, '` + EventLegCancelled + `',
           jsonb_build_object('client_order_id', client_order_id, 'role', role, 'seq', seq,
                              'parent_client_order_id', parent_client_order_id, 'cancelled_by', $2::text,
                              'reason', ` + reason + `)
    FROM u
)
SELECT ` + legColumns + ` FROM u ORDER BY parent_client_order_id, seq`
}

// MarkCancelledExitLegs marks, in q (the cancel signal cancelledBy's claim
// transaction), the exit legs of venue exchangeName and mode whose entry
// keep accepts (the cancel's symbol, and its strategy when it names one)
// and that may rest at the venue or still be sent — armed and open, or
// failed with their order unknown (given up while the venue could not be
// asked, missed) — and returns them. A cancel leaves none of the hoox
// orders it is for resting: such
// a leg is never sent again (MarkLegSent arms no marked leg, Reopen opens
// none); the leg runner looks it up and cancels it at the venue if found.
//
// It first takes the trace lock of every exit leg of the symbol still open
// or unknown, each pass's lock, and holds them until q ends: a pass that
// is sending one finishes first (and records it open, for the cancel's
// LockOpenOrders, which must run after this), and none arms one (an
// unsent exit: DropUnsentExitLegs) until the cancel has committed. A pass
// holding one for longer than q's lock_timeout makes it ErrLockTimeout.
func MarkCancelledExitLegs(ctx context.Context, q DBTX, exchangeName, mode string, keep func(ExitParent) bool, cancelledBy string) ([]Leg, error) {
	ids, keys, err := exitLegsKept(ctx, q, exitLegsToCancelSQL, exchangeName, mode, keep)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	if _, err := q.Exec(ctx, lockLegTracesSQL, keys); err != nil {
		return nil, fmt.Errorf("lock exit legs' traces: %w", translate(err))
	}
	rows, _ := q.Query(ctx, markCancelledExitLegsSQL, ids, cancelledBy)
	legs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Leg, error) { return scanLeg(row) })
	if err != nil {
		return nil, fmt.Errorf("mark cancelled exit legs: %w", translate(err))
	}
	return legs, nil
}
