package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgconv"
)

// ClaimParams describe one signal's claim on its trace ID.
type ClaimParams struct {
	TraceID     string
	LockKey     string
	Fingerprint string
	Mode        string // live | test
	KeySource   string // client | derived | window
	Exchange    string
	Symbol      string
	Action      string
	Signal      []byte // canonical JSON, never holding the secret
	SourceIP    netip.Addr
	SignalTime  time.Time // zero when the signal carried none
	TTL         time.Duration
	Window      time.Duration // only for KeySource window
	LockWait    time.Duration
	// IdleTimeout backs up the rollback on every error path: Postgres ends
	// the claim's session if its transaction sits idle longer (a hung or
	// panicked attempt must not hold the trace's lock forever). It must
	// exceed the longest venue call. Zero leaves the server's setting.
	IdleTimeout time.Duration
}

// queueTxTimeouts sets the transaction's lock_timeout (never zero, which
// Postgres reads as "wait forever") and, when given, its
// idle_in_transaction_session_timeout, in one statement. Both are
// transaction-local, so they work through a transaction-pooling PgBouncer.
func queueTxTimeouts(b *pgx.Batch, lockWait, idle time.Duration) {
	lw, is := txTimeouts(lockWait, idle)
	b.Queue(TxTimeoutsSQL, lw, is)
}

// txTimeouts are TxTimeoutsSQL's two settings: lock_timeout, never zero, and
// the idle timeout, empty (the session's own) when idle is zero.
func txTimeouts(lockWait, idle time.Duration) (lockSetting, idleSetting string) {
	if idle > 0 {
		idleSetting = fmt.Sprintf("%dms", idle.Milliseconds())
	}
	return fmt.Sprintf("%dms", max(lockWait.Milliseconds(), 1)), idleSetting
}

// TxTimeoutsSQL sets lock_timeout ($1) and, unless $2 is empty,
// idle_in_transaction_session_timeout ($2) for the transaction, and makes
// its commit synchronous whatever the server's default: every transaction
// that opens with it (a claim, a reconcile, a sweep, a release) commits
// something the recovery protocol relies on. A repeat's claim, which only
// appends `duplicate` events, turns it off again (AsyncCommitSQL).
const TxTimeoutsSQL = `SELECT set_config('lock_timeout', $1, true),
       CASE WHEN $2 = '' THEN '' ELSE set_config('idle_in_transaction_session_timeout', $2, true) END,
       set_config('synchronous_commit', 'on', true)`

// AsyncCommitSQL makes the transaction's commit asynchronous.
const AsyncCommitSQL = "SELECT set_config('synchronous_commit', 'off', true)"

// SyncCommitSQL makes the transaction's commit synchronous, whatever the
// server's or the session's default (DESIGN: "Durable means durable here").
const SyncCommitSQL = "SELECT set_config('synchronous_commit', 'on', true)"

// ClaimStatements are the statements a claim's connection runs for a new
// signal or a repeat, so a new connection can prepare them up front
// (PoolConfig.Prepare).
func ClaimStatements() []string {
	return []string{"BEGIN", ClaimLockSQL, ClaimSQL, ClaimWindowSQL, ClaimIntentsOnlySQL, RecordOrderSQL, SettleTraceSQL, SettleIntentSQL, settleClaimedIntentSQL,
		InsertEventSQL, AsyncCommitSQL, "COMMIT", SettledTraceSQL}
}

// IntentStatements are what an intent's connection runs (see
// ClaimStatements).
func IntentStatements() []string {
	return []string{AsyncCommitSQL, SyncCommitSQL, WriteIntentSQL}
}

// ClaimedTrace is a trace row as the claim sees it.
type ClaimedTrace struct {
	TraceID       string
	Fingerprint   string
	Status        TraceStatus
	OrderID       *uuid.UUID
	ClientOrderID *string
	ReceivedAt    time.Time
}

// ClaimResult says whether this attempt won the trace ID.
type ClaimResult struct {
	// KillSwitch is true when trading is halted; nothing was written.
	KillSwitch bool
	// Claimed is true when this attempt inserted the trace: it must dispatch.
	Claimed bool
	// Found is false when neither a claim nor an existing row came back: a
	// concurrent first attempt committed after this statement's snapshot.
	Found bool
	Trace ClaimedTrace
	// Executions is the execution number of the next client order ID under
	// the trace's lock key: one past the highest execution any intent of
	// the lock key holds, so it only grows (a late settlement of an
	// earlier execution never lowers it) — or that highest one itself when
	// its intent is provably unsent (ReuseID).
	Executions int
	// ReuseID is the stored client order ID of execution Executions when
	// its intent is provably unsent: the attempt sends under it again
	// (stored, not derived: an ID derived before the deployment namespace
	// existed keeps its old form). Empty otherwise.
	ReuseID string
	// ReuseAttempts is how many times ReuseID's intent was armed, as the
	// claim read it: the attempt re-arms it only if it still holds exactly
	// that (Intent.Armed). 0 when ReuseID is empty.
	ReuseAttempts int
	// Pending is an intent under the lock key with no recorded outcome: an
	// earlier attempt that may have reached the venue and died before its
	// commit. The attempt must reuse its client order ID and ask the venue
	// first. Nil when there is none.
	Pending *PendingIntent
	// Unknown are earlier intents under the lock key whose order may exist
	// at the venue (settled failed: nobody could tell) and whose trace an
	// operator released by force. The attempt must look each up before it
	// places anything (DESIGN: "Unknown never frees a key"). In window
	// mode only those of this execution (received inside the dedup
	// window): an earlier execution's is another order, which the sweeper
	// keeps asking about (ListUnknown).
	Unknown []UnknownIntent
}

// UnknownIntent is an intent whose order's existence is unknown.
type UnknownIntent struct {
	ClientOrderID string         `json:"client_order_id"`
	TraceID       string         `json:"trace_id"`
	Fingerprint   string         `json:"fingerprint"`
	Order         exchange.Order `json:"order"`
	// SentAgo is how long ago it was last sent, by Postgres's clock.
	SentAgo time.Duration `json:"-"`
	// SentAgoMicros carries SentAgo out of the query.
	SentAgoMicros int64 `json:"sent_ago_us"`
}

// PendingIntent is an unsettled intent as the claim sees it.
type PendingIntent struct {
	ClientOrderID string
	TraceID       string
	Fingerprint   string
	// SentAgo is how long ago its order was last sent (or about to be), by
	// Postgres's clock, read during the claim: a "not found" at the venue
	// before the venue's accept window has passed proves nothing, and the
	// window Postgres stamped is judged by Postgres's clock only. It only
	// grows after the claim, so "SentAgo ≥ window" stays true.
	SentAgo time.Duration
	// SameWindow is true when the intent's trace was received inside the
	// claim's dedup window by Postgres's clock (always true outside window
	// mode): in window mode, the same execution of the signal.
	SameWindow bool
	// Attempts is how many times it was armed, as the claim read it: an
	// attempt that sends under its ID re-arms it only if it still holds
	// exactly that (Intent.Armed).
	Attempts int
}

// ClaimTx is an open claim transaction on one connection. It is begun and
// claimed in one round trip and finished in one more, so a new signal costs
// two round trips to Postgres besides the venue's own write.
//
// Its owner ends it: with Record (or Duplicate) to commit, and with a
// deferred Rollback for every other way out, as pgx.BeginFunc does —
// Rollback is a no-op once the transaction has finished, and a method that
// fails has already rolled it back (a failed statement leaves nothing to
// commit), so the deferred call is always safe.
type ClaimTx struct {
	conn *pgxpool.Conn
	done bool
}

// The statements of the claim transaction are exported so the benchmarks
// can run exactly this SQL under pgbench.

// ClaimLockSQL sets the claim transaction's timeouts and synchronous commit
// (as TxTimeoutsSQL: $1 lock_timeout, $2 idle timeout or empty) and then
// takes the trace's advisory lock ($3 the lock key), in one statement: the
// target list is evaluated in order, so lock_timeout holds for the lock's
// wait. The lock is skipped when the trace ($4) is already settled: a
// committed, settled row never changes, so a repeat of it needs no wait. The
// unique index, not the lock, is what guarantees a single claim.
const ClaimLockSQL = TxTimeoutsSQL + `,
       (SELECT 1 FROM (SELECT pg_advisory_xact_lock(hashtextextended($3, 0))) l
        WHERE NOT EXISTS (
            SELECT 1 FROM trace_ids
            WHERE trace_id = $4 AND status IN ('dispatched', 'rejected', 'failed')))`

// ClaimSQL checks the kill switch, inserts the trace with its received event
// or returns the existing one, and says whether the lock key has intents
// that the attempt must know about, in one statement. ClaimWindowSQL is the
// same for a window key, which first looks for a trace of the same signal
// inside the window ($13, in ms; null for other keys), and reads the
// intents in the same statement.
//
// The intents are read for a claimed trace, and for a signal refused by the
// kill switch before it had a trace (coalesce(r.claimed, ks.engaged)): an
// earlier attempt's open intent must keep that refusal from saying
// "nothing was placed".
//
// The intents come back as one JSON array (ClaimIntentsSQL), ordered by
// execution: the last one (the highest execution, which numbers the next
// client order ID) and every one still open or failed (pending and
// unknown orders). The claim decides from them in Go (claimIntents): one
// index scan, where three lookups each paid their own executor setup on
// every new signal. A client or derived key's claim only probes for them
// (EXISTS) and reads them with ClaimIntentsOnlySQL, one more round trip in
// the same transaction, when there are any: a new signal's lock key mostly
// has none, and the array's expressions cost the claim statement over a
// third of its time to set up even when no row came back (issue 21, sixth
// round). A window key shares its lock key with every earlier signal of the
// same content, so it mostly has intents: its claim reads them at once.
var (
	ClaimSQL       = claimSQL(false)
	ClaimWindowSQL = claimSQL(true)
)

// ClaimIntentsSQL is the claim's read of the lock key's intents ($14).
// Comparing outcome through coalesce with the empty string keeps the
// partial indexes on outcome out of it (the planner cannot prove their
// predicates from it): read through them, unfiltered by lock key, a claim
// cost as much as there were unsettled (or failed) intents in all (00005,
// 00010). The lock key's own few rows come from (lock_key, execution).
var ClaimIntentsSQL = claimIntentsSQL("coalesce(r.claimed, ks.engaged) AND ", "$13", "$14", "")

// ClaimIntentsOnlySQL reads the lock key's intents ($2) on their own, in
// the claim's transaction, when its statement found some; $1 is the
// dedup window in ms, null for a client or derived key. It sees what the
// claim statement could not: the trace that statement inserted ($3), which
// therefore never counts as a failed intent's trace, exactly as in the
// claim statement's snapshot. Anything else it sees differently was
// committed in between: newer, never older.
var ClaimIntentsOnlySQL = "SELECT " + claimIntentsSQL("", "$1", "$2", " AND t.trace_id <> $3")

func claimIntentsSQL(cond, window, lockKey, otherTrace string) string {
	return `(
    SELECT jsonb_agg(jsonb_build_object('client_order_id', i.client_order_id, 'trace_id', i.trace_id,
               'fingerprint', i.fingerprint, 'execution', i.execution, 'outcome', i.outcome, 'attempts', i.attempts,
               'sent_ago_us', (extract(epoch FROM clock_timestamp() - i.sent_at) * 1000000)::bigint,
               'same_window', (` + window + `::bigint IS NULL OR i.received_at > now() - ` + window + `::bigint * interval '1 millisecond'),
               'order', CASE WHEN i.outcome = 'failed' THEN i.order_spec END,
               'traced', CASE WHEN i.outcome = 'failed' THEN EXISTS (SELECT 1 FROM trace_ids t WHERE t.trace_id = i.trace_id` + otherTrace + `) END)
             ORDER BY i.execution)
    FROM dispatch_intents i
    WHERE ` + cond + `i.lock_key = ` + lockKey + `
      AND (coalesce(i.outcome, '') IN ('', 'failed')
           OR i.execution = (SELECT max(l.execution) FROM dispatch_intents l WHERE l.lock_key = ` + lockKey + `)))`
}

func claimSQL(window bool) string {
	prior, notPrior, orPrior := "", "", ""
	// A client or derived key: no intents, and whether to read them
	// (ClaimIntentsOnlySQL). $13, the window, is null for these keys; it is
	// named so that both statements bind the same parameters.
	intents := `NULL::jsonb, coalesce(r.claimed, ks.engaged) AND $13::bigint IS NULL
           AND EXISTS (SELECT 1 FROM dispatch_intents i WHERE i.lock_key = $14)`
	if window {
		intents = ClaimIntentsSQL + ", false"
		prior = `
), prior AS (
    SELECT t.trace_id, t.fingerprint, t.status, t.order_id, t.client_order_id, t.received_at
    FROM trace_ids t
    WHERE $13::bigint IS NOT NULL AND t.key_source = 'window' AND t.fingerprint = $2
      AND t.received_at > now() - $13::bigint * interval '1 millisecond'
    ORDER BY t.received_at DESC
    LIMIT 1`
		notPrior = " AND NOT EXISTS (SELECT 1 FROM prior)"
		orPrior = `
    UNION ALL
    SELECT false, * FROM prior`
	}
	return `
WITH ks AS (
    SELECT ` + killSwitchEngagedSQL + ` AS engaged` + prior + `
), ins AS (
    INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action,
                           signal, source_ip, signal_time, received_at, updated_at, expires_at)
    SELECT $1, $2, $3::text, $4::text, 'claimed', $5, $6, $7, $8, $9, $10, now(), now(), now() + $11::bigint * interval '1 millisecond'
    WHERE NOT (SELECT engaged FROM ks)` + notPrior + `
    ON CONFLICT (trace_id) DO NOTHING
    RETURNING trace_id, fingerprint, status, order_id, client_order_id, received_at
), ev AS (
    INSERT INTO trace_events (trace_id, event, source_ip, detail)
    SELECT trace_id, 'received', $9, $12 FROM ins
)
SELECT ks.engaged, r.claimed, r.trace_id, r.fingerprint, r.status, r.order_id, r.client_order_id, r.received_at,
       ` + intents + `
FROM ks LEFT JOIN LATERAL (
    SELECT true AS claimed, * FROM ins
    UNION ALL
    SELECT false, t.trace_id, t.fingerprint, t.status, t.order_id, t.client_order_id, t.received_at
    FROM trace_ids t WHERE t.trace_id = $1 AND NOT EXISTS (SELECT 1 FROM ins)` + orPrior + `
    LIMIT 1
) r ON true`
}

// claimIntent is one intent as ClaimIntentsSQL returns it.
type claimIntent struct {
	ClientOrderID string          `json:"client_order_id"`
	TraceID       string          `json:"trace_id"`
	Fingerprint   string          `json:"fingerprint"`
	Execution     int             `json:"execution"`
	Outcome       *string         `json:"outcome"`
	Attempts      int             `json:"attempts"`
	SentAgoMicros int64           `json:"sent_ago_us"`
	SameWindow    bool            `json:"same_window"`
	Order         json.RawMessage `json:"order"`
	Traced        *bool           `json:"traced"`
}

// claimIntents fills res's Executions, ReuseID, Pending and Unknown from the
// lock key's intents (ClaimIntentsSQL's array, in execution order).
func claimIntents(raw []byte, res *ClaimResult) error {
	if raw == nil {
		return nil
	}
	var intents []claimIntent
	if err := json.Unmarshal(raw, &intents); err != nil {
		return fmt.Errorf("decode the lock key's intents: %w", err)
	}
	if len(intents) == 0 {
		return nil
	}
	// The highest execution numbers the next client order ID: itself when
	// its intent is provably unsent (the ID is sent again), else one more.
	last := intents[len(intents)-1]
	res.Executions = last.Execution + 1
	if last.Outcome != nil && *last.Outcome == string(IntentUnsent) {
		res.Executions, res.ReuseID, res.ReuseAttempts = last.Execution, last.ClientOrderID, last.Attempts
	}
	for _, in := range intents {
		switch {
		case in.Outcome == nil:
			// An open intent of this window's execution first (in window
			// mode two can be open: an earlier execution's and this one's,
			// when both attempts died; this signal's resend must adopt its
			// own and leave the other to the sweeper), then the one sent
			// longest ago (the highest sent_ago).
			p := res.Pending
			if p == nil || (in.SameWindow && !p.SameWindow) ||
				(in.SameWindow == p.SameWindow && in.SentAgoMicros > p.SentAgo.Microseconds()) {
				res.Pending = &PendingIntent{ClientOrderID: in.ClientOrderID, TraceID: in.TraceID,
					Fingerprint: in.Fingerprint, SentAgo: time.Duration(in.SentAgoMicros) * time.Microsecond,
					SameWindow: in.SameWindow, Attempts: in.Attempts}
			}
		case *in.Outcome == string(IntentFailed) && in.Traced != nil && !*in.Traced && in.SameWindow:
			// Released by force with its order unknown: this signal's own
			// earlier attempt, which it must ask about before placing. In
			// window mode only one of this execution (same window): a
			// later execution is a new order the strategy asked for, and
			// an earlier one's unknown order is the sweeper's to ask about
			// (ListUnknown), not this execution's to adopt or wait for.
			u := UnknownIntent{ClientOrderID: in.ClientOrderID, TraceID: in.TraceID, Fingerprint: in.Fingerprint,
				SentAgoMicros: in.SentAgoMicros, SentAgo: time.Duration(in.SentAgoMicros) * time.Microsecond}
			if err := json.Unmarshal(in.Order, &u.Order); err != nil {
				return fmt.Errorf("decode unknown intent %s: %w", in.ClientOrderID, err)
			}
			res.Unknown = append(res.Unknown, u)
		}
	}
	return nil
}

// SettledTraceSQL reads a settled trace as the claim would return it.
const SettledTraceSQL = `
SELECT trace_id, fingerprint, status, order_id, client_order_id, received_at
FROM trace_ids WHERE trace_id = $1 AND status IN ('dispatched', 'rejected', 'failed')`

// SettledTrace reads trace traceID when it is settled, with one plain read
// (no transaction): a settled row never changes until a release or the
// purge deletes it, so what the read returns is what a claim would have
// found at that moment. found is false when the trace does not exist or
// is not settled.
func SettledTrace(ctx context.Context, pool *pgxpool.Pool, traceID string) (t ClaimedTrace, found bool, err error) {
	var orderID pgtype.UUID
	err = pool.QueryRow(ctx, SettledTraceSQL, traceID).Scan(&t.TraceID, &t.Fingerprint, &t.Status, &orderID,
		&t.ClientOrderID, &t.ReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return ClaimedTrace{}, false, nil
	}
	if err != nil {
		return ClaimedTrace{}, false, translate(err)
	}
	if orderID.Valid {
		id := uuid.UUID(orderID.Bytes)
		t.OrderID = &id
	}
	return t, true, nil
}

// Claim begins a transaction, waits at most LockWait for the trace's advisory
// lock, and inserts the trace unless it exists — all in one round trip. When
// the result is not Claimed or the kill switch is engaged the caller finishes
// with Duplicate or Rollback; a claimed trace ends with Record or Rollback.
func Claim(ctx context.Context, pool *pgxpool.Pool, p ClaimParams) (*ClaimTx, ClaimResult, error) {
	tx, res, err := claimOnce(ctx, pool, p)
	if errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrBusy) && ctx.Err() == nil {
		// A connection that died since the pool last used it (Postgres
		// restarted or failed over) fails the batch before anything can
		// commit, so the claim is safe to run again, once, on another.
		tx, res, err = claimOnce(ctx, pool, p)
	}
	return tx, res, err
}

func claimOnce(ctx context.Context, pool *pgxpool.Pool, p ClaimParams) (*ClaimTx, ClaimResult, error) {
	// Waiting for a connection is bounded like waiting for the lock: an
	// overloaded hoox answers 503 while the sender still listens
	// (TradingView gives up after 3 s and resends only on a 5xx), instead of
	// queueing signals its senders have already abandoned.
	actx, cancel := context.WithTimeout(ctx, max(p.LockWait, time.Millisecond))
	conn, err := pool.Acquire(actx)
	cancel()
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, ClaimResult{}, ErrBusy
		}
		return nil, ClaimResult{}, translate(err)
	}
	var window *int64
	if p.KeySource == "window" {
		w := p.Window.Milliseconds()
		window = &w
	}
	var signalTime *time.Time
	if !p.SignalTime.IsZero() {
		signalTime = &p.SignalTime
	}
	detail := fmt.Sprintf(`{"fingerprint":%q,"key_source":%q}`, p.Fingerprint, p.KeySource)

	b := &pgx.Batch{}
	b.Queue("BEGIN")
	lockWait, idle := txTimeouts(p.LockWait, p.IdleTimeout)
	b.Queue(ClaimLockSQL, lockWait, idle, p.LockKey, p.TraceID)
	var res ClaimResult
	var readIntents *bool
	sql := ClaimSQL
	if window != nil {
		sql = ClaimWindowSQL
	}
	b.Queue(sql, p.TraceID, p.Fingerprint, p.Mode, p.KeySource, p.Exchange, p.Symbol, p.Action,
		p.Signal, addrArg(p.SourceIP), signalTime, p.TTL.Milliseconds(), detail, window, p.LockKey).
		QueryRow(func(row pgx.Row) error {
			var claimed *bool
			var traceID, fingerprint *string
			var status *TraceStatus
			var receivedAt *time.Time
			var orderID pgtype.UUID
			var intents []byte
			err := row.Scan(&res.KillSwitch, &claimed, &traceID, &fingerprint, &status,
				&orderID, &res.Trace.ClientOrderID, &receivedAt, &intents, &readIntents)
			if err != nil {
				return err
			}
			if err := claimIntents(intents, &res); err != nil {
				return err
			}
			if orderID.Valid {
				id := uuid.UUID(orderID.Bytes)
				res.Trace.OrderID = &id
			}
			if claimed != nil {
				res.Found = true
				res.Claimed = *claimed
				res.Trace.TraceID, res.Trace.Fingerprint, res.Trace.Status = *traceID, *fingerprint, *status
				res.Trace.ReceivedAt = *receivedAt
			}
			return nil
		})
	tx := &ClaimTx{conn: conn}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		tx.Rollback(ctx)
		return nil, ClaimResult{}, translate(err)
	}
	if readIntents != nil && *readIntents {
		var intents []byte
		err := conn.QueryRow(ctx, ClaimIntentsOnlySQL, window, p.LockKey, p.TraceID).Scan(&intents)
		if err == nil {
			err = claimIntents(intents, &res)
		}
		if err != nil {
			tx.Rollback(ctx)
			return nil, ClaimResult{}, translate(err)
		}
	}
	return tx, res, nil
}

// Event is one audit row.
type Event struct {
	TraceID  string
	Event    string
	SourceIP netip.Addr
	Detail   map[string]any
	// DetailJSON is the detail already encoded as a JSON object, used
	// when Detail is nil: a repeat's event (FingerprintDetail) is written
	// without a map and an encoder per repeat (issue 21).
	DetailJSON string
}

// FingerprintDetail is the detail {"fingerprint": fp} as DetailJSON, the
// same text json.Marshal writes for that map.
func FingerprintDetail(fp string) string {
	for i := 0; i < len(fp); i++ {
		if c := fp[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			b, _ := json.Marshal(map[string]string{"fingerprint": fp})
			return string(b)
		}
	}
	return `{"fingerprint":"` + fp + `"}`
}

// OrderRow is an order as recorded.
type OrderRow struct {
	ID              uuid.UUID           `db:"id"`
	TraceID         string              `db:"trace_id"`
	ClientOrderID   string              `db:"client_order_id"`
	Exchange        string              `db:"exchange"`
	Symbol          string              `db:"symbol"`
	Action          string              `db:"action"`
	Side            string              `db:"side"`
	OrderType       string              `db:"order_type"`
	Quantity        decimal.Decimal     `db:"quantity"`
	Price           decimal.NullDecimal `db:"price"`
	Leverage        *int32              `db:"leverage"`
	Mode            string              `db:"mode"`
	Status          string              `db:"status"`
	ExchangeOrderID *string             `db:"exchange_order_id"`
	FillPrice       decimal.NullDecimal `db:"fill_price"`
	// FilledQuantity is what the venue executed (Quantity is what was
	// sent); null for a rejected order and for rows older than the column.
	FilledQuantity decimal.NullDecimal `db:"filled_quantity"`
	RejectReason   *string             `db:"reject_reason"`
	// Role is what the order is to its trace: exchange.RolePrimary (the
	// signal's own order) or a leg's role (exchange.RoleClosePart, …).
	Role      string    `db:"role"`
	CreatedAt time.Time `db:"created_at"`
	// TakeProfit and StopLoss are the exits the venue took on the order
	// itself (or, for a rejected order, the ones it was sent with); null
	// when it carried none. On a take_profit or stop_loss leg (an exit
	// placed as its own order), the leg's trigger price.
	TakeProfit decimal.NullDecimal `db:"take_profit"`
	StopLoss   decimal.NullDecimal `db:"stop_loss"`
	// CallbackRate is a trailing_stop leg's rate in percent as the venue
	// holds it (Binance USDⓈ-M callbackRate); null on every other order.
	CallbackRate decimal.NullDecimal `db:"callback_rate"`
	// TrailingDistance is a trailing_stop leg's price distance as the
	// venue holds it (Bybit linear: the position's trailingStop); null on
	// every other order.
	TrailingDistance decimal.NullDecimal `db:"trailing_distance"`
	// AvgPrice is the average price of what executed; null while nothing
	// has, and on rows older than the column.
	AvgPrice decimal.NullDecimal `db:"avg_price"`
	// Fee is what the venue charged so far, in FeeAsset; null while
	// nothing executed or when the venue did not say.
	Fee      decimal.NullDecimal `db:"fee"`
	FeeAsset *string             `db:"fee_asset"`
	// UpdatedAt is when a follow job or a cancel last changed the row
	// (null: never since it was recorded); FinalAt when it became final
	// (filled, cancelled, expired or rejected after being accepted).
	UpdatedAt *time.Time `db:"updated_at"`
	FinalAt   *time.Time `db:"final_at"`
	// CancelledBy is the trace of the cancel signal that cancelled it.
	CancelledBy *string `db:"cancelled_by"`
	// Strategy is the signal's strategy ("" for a signal that named none),
	// on every order and exit hoox places (a cancel naming a strategy
	// takes only its own); nil on one recorded before 00046 whose signal
	// held none. BaseAsset is set on a spot order, whose fills count in
	// the strategy's spot ledger (migration 00012's trigger); nil
	// elsewhere.
	Strategy  *string `db:"strategy"`
	BaseAsset *string `db:"base_asset"`
	// ExecutedExit is, for an OCO exit list (role oco), which of its two
	// orders executed (exchange.RoleTakeProfit, or RoleStopLoss /
	// RoleTrailingStop for its stop order); nil until
	// one did, and on every other order.
	ExecutedExit *string `db:"executed_exit"`
	// UnfollowedAt is when hoox stopped following an exit still open at
	// its follow horizon (the row keeps its last known state); nil while
	// followed and on every other order.
	UnfollowedAt *time.Time `db:"unfollowed_at"`
	// NoLegs says the order's intent planned no legs, so the trigger that
	// plans them (migration 00023) is not called. Only a writer that holds
	// the order's legs may set it; the zero value keeps the trigger looking.
	NoLegs bool `db:"-"`
}

// InsertOrderSQL records an order.
const InsertOrderSQL = `
INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type, quantity, price,
                    leverage, mode, status, exchange_order_id, fill_price, reject_reason, filled_quantity,
                    take_profit, stop_loss, avg_price, fee, fee_asset, strategy, base_asset, plans_legs)
VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), $8::text, $9::numeric, $10::numeric, $11::integer, $12::text, $13::text, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)
RETURNING created_at`

// SettleTraceSQL sets a trace's outcome.
const SettleTraceSQL = `
UPDATE trace_ids SET status = $2::text, order_id = $3, client_order_id = $4, updated_at = now()
WHERE trace_id = $1`

// InsertEventSQL appends an audit event.
const InsertEventSQL = `
INSERT INTO trace_events (trace_id, event, source_ip, detail) VALUES ($1, $2, $3, coalesce($4, '{}'::jsonb))`

// Settlement is how a claimed trace ends in its own transaction.
type Settlement struct {
	TraceID string
	// Status is the trace's new status.
	Status TraceStatus
	// Order is recorded when the venue holds (or refused) one; nil when no
	// order is known (reconciling).
	Order *OrderRow
	// ClientOrderID is stored on the trace when Order is nil (reconciling),
	// so operators and the sweeper know which order to look for.
	ClientOrderID string
	// IntentID, when set, settles that intent with IntentOutcome in the same
	// commit, so an order is never recorded without its intent being closed
	// (and the sweeper never re-asks the venue about it). The intent
	// becomes TraceID's (its trace_id): a window-mode resend is a trace of
	// its own, and settles the open intent its dead first arrival armed
	// under a trace that never committed. Whatever reads an intent's trace
	// (ListUnknown, the claim's "released by force", the purge's kept
	// traces) must find the trace that holds its outcome.
	IntentID      string
	IntentOutcome IntentOutcome
	Events        []Event
}

// Record writes the settlement's order, settles the trace and its intent,
// appends events and commits — one round trip. A settlement with an order
// and its intent, the way nearly every signal ends, is one statement
// (RecordOrderSQL): each statement has a fixed cost in Postgres (bind,
// portal, snapshot, executor start and end) that four would pay four times.
func (c *ClaimTx) Record(ctx context.Context, st Settlement) error {
	if st.Order != nil && st.IntentID != "" {
		traces, names, ips, details, err := eventArrays(st.Events)
		if err != nil {
			c.Rollback(ctx)
			return err
		}
		o := st.Order
		args := append(orderArgs(o), st.TraceID, st.Status, st.IntentOutcome, st.IntentID)
		for i := range traces {
			args = append(args, traces[i], names[i], ips[i], details[i])
		}
		return c.finish(ctx, false, func(b *pgx.Batch) {
			b.Queue(RecordOrderEventsSQL(len(traces)), args...).
				QueryRow(func(row pgx.Row) error { return row.Scan(&o.CreatedAt) })
		})
	}
	return c.finish(ctx, false, func(b *pgx.Batch) {
		var orderID *uuid.UUID
		var clientOrderID *string
		if st.ClientOrderID != "" {
			clientOrderID = &st.ClientOrderID
		}
		if st.Order != nil {
			queueOrder(b, st.Order)
			orderID, clientOrderID = &st.Order.ID, &st.Order.ClientOrderID
		}
		b.Queue(SettleTraceSQL, st.TraceID, st.Status, pgconv.UUIDPtr(orderID), clientOrderID)
		if st.IntentID != "" {
			b.Queue(settleClaimedIntentSQL, st.IntentID, st.IntentOutcome, st.TraceID)
		}
		queueEvents(b, st.Events)
	})
}

// settleClaimedIntentSQL is SettleIntentSQL for a claim's settlement: the
// intent ($1) takes its outcome ($2) and the claim's trace ($3).
const settleClaimedIntentSQL = `
UPDATE dispatch_intents SET outcome = $2::text, settled_at = now(), trace_id = $3 WHERE client_order_id = $1`

// RecordOrderSQL is a settlement with an order and its intent in one
// statement: the order (InsertOrderSQL, $1–$25), the trace ($26, status
// $27, pointing at the order), the intent ($29, outcome $28, made the
// trace's: Settlement.IntentID) and one event
// ($30–$33: trace ID, event, source IP and detail as text, the last two
// null for none), the way nearly every signal ends. Data-modifying WITH
// queries all run, once each, referenced or not; the order's AFTER triggers
// fire at the end of the statement and see the rest of it.
var RecordOrderSQL = RecordOrderEventsSQL(1)

// recordOrderSQLs are RecordOrderEventsSQL's statements for up to eight
// events, built once.
var recordOrderSQLs = func() (s [9]string) {
	for n := range s {
		s[n] = recordOrderEventsSQL(n)
	}
	return s
}()

// RecordOrderEventsSQL is RecordOrderSQL with n events, four parameters
// each from $30 on, inserted in their order (n = 0: no events' insert at
// all). The events are a VALUES list: unnest over four arrays WITH
// ORDINALITY, sorted, cost the one-event statement 7 % more (issue 21,
// sixth round).
func RecordOrderEventsSQL(n int) string {
	if n >= 0 && n < len(recordOrderSQLs) {
		return recordOrderSQLs[n]
	}
	return recordOrderEventsSQL(n)
}

func recordOrderEventsSQL(n int) string {
	events := ""
	if n > 0 {
		events = `, e AS (
    INSERT INTO trace_events (trace_id, event, source_ip, detail)
    VALUES `
	}
	var rows strings.Builder
	for i := range n {
		if i > 0 {
			rows.WriteString(",\n       ")
		}
		p := 30 + 4*i
		fmt.Fprintf(&rows, "($%d, $%d, $%d::text::inet, coalesce($%d::text::jsonb, '{}'::jsonb))", p, p+1, p+2, p+3)
	}
	if n > 0 {
		rows.WriteString("\n)")
	}
	return `
WITH o AS (` + InsertOrderSQL + `
), t AS (
    UPDATE trace_ids SET status = $27::text, order_id = $1, client_order_id = $3, updated_at = now()
    WHERE trace_id = $26
), i AS (
    UPDATE dispatch_intents SET outcome = $28::text, settled_at = now(), trace_id = $26 WHERE client_order_id = $29
)` + events + rows.String() + `
SELECT created_at FROM o`
}

// Duplicate appends the repeat's audit events and commits. When they are
// all `duplicate` events it commits with synchronous_commit off: a Postgres
// crash may lose the last fraction of a second of duplicate events, never a
// claim, an order or any other event (a `key_reused` commits durably).
func (c *ClaimTx) Duplicate(ctx context.Context, events ...Event) error {
	return c.finish(ctx, onlyDuplicates(events), func(b *pgx.Batch) { queueEvents(b, events) })
}

// onlyDuplicates reports whether every event is a `duplicate`: the only
// audit event that may commit asynchronously.
func onlyDuplicates(events []Event) bool {
	for _, e := range events {
		if e.Event != EventDuplicate {
			return false
		}
	}
	return true
}

// AppendRepeatEvents commits repeats' audit events outside any claim, in
// one round trip and, like Duplicate, asynchronously when they are all
// `duplicate` events.
func AppendRepeatEvents(ctx context.Context, pool *pgxpool.Pool, events []Event) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if onlyDuplicates(events) {
		b.Queue(AsyncCommitSQL)
	}
	if err := queueEventRows(b, events); err != nil {
		return err
	}
	return sendTx(ctx, pool, b)
}

// InsertEventsSQL appends many audit events in one statement, in the order
// of its arrays: trace IDs, events, source IPs (text, null for none) and
// details (JSON text, null for none).
var InsertEventsSQL = insertEventsSQL(1)

// insertEventsSQL is InsertEventsSQL with its four arrays at $first and on.
func insertEventsSQL(first int) string {
	return fmt.Sprintf(`
INSERT INTO trace_events (trace_id, event, source_ip, detail)
SELECT t, e, ip::inet, coalesce(d::jsonb, '{}'::jsonb)
FROM unnest($%d::text[], $%d::text[], $%d::text[], $%d::text[]) WITH ORDINALITY AS u(t, e, ip, d, n)
ORDER BY n`, first, first+1, first+2, first+3)
}

// queueEventRows queues events as one multi-row insert (InsertEventsSQL).
func queueEventRows(b *pgx.Batch, events []Event) error {
	traces, names, ips, details, err := eventArrays(events)
	if err != nil {
		return err
	}
	b.Queue(InsertEventsSQL, traces, names, ips, details)
	return nil
}

// eventArrays are events as InsertEventsSQL's four arrays.
func eventArrays(events []Event) (traces, names []string, ips, details []*string, err error) {
	traces, names = make([]string, len(events)), make([]string, len(events))
	ips, details = make([]*string, len(events)), make([]*string, len(events))
	for i, e := range events {
		traces[i], names[i] = e.TraceID, e.Event
		if e.SourceIP.IsValid() {
			ip := e.SourceIP.Unmap().String()
			ips[i] = &ip
		}
		switch {
		case e.Detail != nil:
			d, err := json.Marshal(e.Detail)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("encode the detail of event %s: %w", e.Event, err)
			}
			ds := string(d)
			details[i] = &ds
		case e.DetailJSON != "":
			details[i] = &events[i].DetailJSON
		}
	}
	return traces, names, ips, details, nil
}

// Tx exposes the open transaction for River's InsertTx, so a job commits with
// the business write or not at all.
func (c *ClaimTx) Tx() pgx.Tx { return connTx{conn: c.conn.Conn()} }

// Rollback ends the transaction without a trace of it. Safe to call after
// the transaction has finished.
func (c *ClaimTx) Rollback(ctx context.Context) {
	if c.done {
		return
	}
	c.done = true
	// A fresh context: a cancelled request must still roll back, or the pool
	// has to throw the connection away.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := c.conn.Exec(rctx, "ROLLBACK"); err != nil {
		// The pool destroys a connection that is not idle on release.
		_ = c.conn.Conn().Close(rctx)
	}
	c.conn.Release()
}

func (c *ClaimTx) finish(ctx context.Context, async bool, queue func(*pgx.Batch)) error {
	if c.done {
		return errors.New("claim transaction already finished")
	}
	b := &pgx.Batch{}
	if async {
		b.Queue(AsyncCommitSQL)
	}
	queue(b)
	b.Queue("COMMIT")
	if err := c.conn.SendBatch(ctx, b).Close(); err != nil {
		c.Rollback(ctx)
		return translate(err)
	}
	c.done = true
	c.conn.Release()
	return nil
}

func queueOrder(b *pgx.Batch, o *OrderRow) {
	b.Queue(InsertOrderSQL, orderArgs(o)...).QueryRow(func(row pgx.Row) error { return row.Scan(&o.CreatedAt) })
}

// orderArgs are InsertOrderSQL's parameters for o.
func orderArgs(o *OrderRow) []any {
	return []any{pgconv.UUID(o.ID), o.TraceID, o.ClientOrderID, o.Exchange, o.Symbol, o.Action, o.Side, o.OrderType,
		pgconv.Numeric(o.Quantity), pgconv.NullNumeric(o.Price), o.Leverage, o.Mode, o.Status, o.ExchangeOrderID,
		pgconv.NullNumeric(o.FillPrice), o.RejectReason, pgconv.NullNumeric(o.FilledQuantity),
		pgconv.NullNumeric(o.TakeProfit), pgconv.NullNumeric(o.StopLoss),
		pgconv.NullNumeric(o.AvgPrice), pgconv.NullNumeric(o.Fee), o.FeeAsset, o.Strategy, o.BaseAsset, !o.NoLegs}
}

func queueEvents(b *pgx.Batch, events []Event) {
	for _, e := range events {
		var detail any
		switch {
		case e.Detail != nil:
			detail = e.Detail
		case e.DetailJSON != "":
			detail = e.DetailJSON
		}
		b.Queue(InsertEventSQL, e.TraceID, e.Event, addrArg(e.SourceIP), detail)
	}
}

func addrArg(a netip.Addr) any {
	if !a.IsValid() {
		return nil
	}
	return a.Unmap().String()
}

// connTx presents a connection that is inside a transaction begun by a batch
// as a pgx.Tx, for River's InsertTx. It cannot commit or nest: the ClaimTx
// that owns the connection ends the transaction.
type connTx struct{ conn *pgx.Conn }

func (t connTx) Begin(context.Context) (pgx.Tx, error) {
	return nil, errors.New("nested transactions are not supported on a claim transaction")
}
func (t connTx) Commit(context.Context) error {
	return errors.New("a claim transaction is committed by its ClaimTx")
}
func (t connTx) Rollback(context.Context) error {
	return errors.New("a claim transaction is rolled back by its ClaimTx")
}
func (t connTx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.conn.CopyFrom(ctx, table, cols, src)
}
func (t connTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.conn.SendBatch(ctx, b)
}
func (t connTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t connTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}
func (t connTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.conn.Exec(ctx, sql, args...)
}
func (t connTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.conn.Query(ctx, sql, args...)
}
func (t connTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.conn.QueryRow(ctx, sql, args...)
}
func (t connTx) Conn() *pgx.Conn { return t.conn }
