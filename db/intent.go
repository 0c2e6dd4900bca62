package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/exchange"
)

// ErrIntentConsumed means a client order ID was about to be sent although
// its intent is no longer what the attempt's claim read: settled with an
// order, or armed by another attempt since (one whose claim took the
// trace's lock after this attempt's claim connection, and with it the
// lock, was lost). The attempt must stop before the venue sees anything.
var ErrIntentConsumed = errors.New("client order id settled or armed by another attempt")

// ErrKillSwitch means trading is halted by the kill switch: nothing was
// armed, so nothing may be sent.
var ErrKillSwitch = errors.New("trading is halted by the kill switch")

// Intent is what an attempt is about to send, made durable before the venue
// sees any of it.
type Intent struct {
	ClientOrderID string
	// Execution is which execution of LockKey the ID was derived for
	// (ClaimResult.Executions); an intent re-armed under its stored ID
	// keeps the number it has.
	Execution int
	// LockKey is the trace's advisory lock key: what every resend of the
	// signal shares, even in window mode.
	LockKey     string
	TraceID     string
	Fingerprint string
	Mode        string
	KeySource   string
	Exchange    string
	Order       exchange.Order
	// Signal is the canonical signal (never the secret): the sweeper
	// creates the trace from it when nobody resends.
	Signal     []byte
	SourceIP   netip.Addr
	SignalTime time.Time
	ReceivedAt time.Time
	// Armed is how many times the caller's claim saw the intent armed: 0
	// for a client order ID no intent holds yet, else the Attempts of the
	// intent it re-arms (ClaimResult.ReuseAttempts, PendingIntent.Attempts).
	// WriteIntent arms the intent only if it still holds exactly that, so
	// of two attempts that read the same state only one sends.
	Armed int
	// ArmID names this attempt's arming of the intent: a random number
	// WriteIntent chooses (when zero) and writes with it, which no other
	// arming shares. Armed+1 does not name it: an attempt whose claim's
	// lock was lost and the attempt that claimed next both read Armed, and
	// if the latter's write fails with its outcome unknown, the arming it
	// then settles unsent may be the former's, whose order is on its way
	// (SettleAttempt).
	ArmID int64
	// Ledger, set for a spot close sized from the spot ledger, is the
	// entry and version the close read under the ledger's lock
	// (LockLedger). WriteIntent then writes the intent only if no other
	// close of that entry wrote its own since, and bumps the version in
	// the same statement (ErrIntentConsumed otherwise): the lock is the
	// claim's session's, and lost with it. Nil for every other order.
	Ledger *LedgerVersion
	// AfterVenueCall is set when the attempt called the venue since its
	// claim read the kill switch (a lookup of an earlier attempt's order,
	// a sizing or position read: each up to the venue timeout). WriteIntent
	// then reads the switch again in the intent's own statement and
	// writes nothing while it is engaged (ErrKillSwitch): an operator
	// answered "engaged" during that call must see no order placed after
	// it. An attempt that called nothing leaves it false, and its
	// statement stays WriteIntentSQL: the claim's reading is as fresh as
	// the switch can be read before the send anyway.
	AfterVenueCall bool
	// SentAt and Attempts are read back, never written by the caller.
	SentAt   time.Time
	Attempts int
	// SentAgo is how long ago SentAt was by Postgres's clock when the
	// intent was read (queries returning intentColumns); a replica's clock
	// is never compared with SentAt.
	SentAgo time.Duration
}

// WriteIntentSQL inserts the intent, or re-arms an intent of the same client
// order ID that is still open (a resend after a crash) or provably unsent,
// and appends its dispatch_started event — one statement, so it commits on
// its own as one implicit transaction, synchronously when $16 is 'on' and
// asynchronously when it is 'off' (set in the same statement: the setting
// holds until the commit that ends it). It never touches an intent settled
// with an order, nor one armed since the caller's claim read it (its
// attempts differ from $17, Intent.Armed; a new ID's $17 is 0, and a row
// holds 1 or more): no row comes back then, and nothing is written. $18 is
// the arming's own ID (Intent.ArmID). A re-armed intent takes the whole
// identity of the attempt that arms it: an unsent ID may be sent again for
// another signal under the same key, whose resends and whose sweep must
// see that signal, not the earlier one.
const WriteIntentSQL = `
WITH i AS (
    INSERT INTO dispatch_intents ` + intentInsertColumns + `
    VALUES ` + intentInsertValues + `
    ` + intentArmSQL + `
), ev AS (` + intentStartedSQL + `)
SELECT sent_at, attempts, set_config('synchronous_commit', $16, true) FROM i`

// WriteIntentHaltedSQL is WriteIntentSQL for an attempt that called the
// venue since its claim (Intent.AfterVenueCall): it reads the kill switch
// in the same statement and writes nothing, neither the intent nor its
// event, while the switch is engaged. It always returns one row: the
// switch, then the intent's sent_at and attempts (null when nothing was
// written).
var WriteIntentHaltedSQL = haltableIntentSQL(`
WITH ks AS (
    SELECT ` + killSwitchEngagedSQL + ` AS engaged
), i AS (
    INSERT INTO dispatch_intents ` + intentInsertColumns + `
    SELECT ` + intentInsertValuesList + ` FROM ks WHERE NOT ks.engaged
    ` + intentArmSQL + `
), ev AS (` + intentStartedSQL + `)`)

// haltableIntentSQL ends an intent write whose CTEs read the kill switch
// (ks) with the one row WriteIntentHaltedSQL returns.
func haltableIntentSQL(with string) string {
	return with + `
SELECT ks.engaged, i.sent_at, i.attempts, set_config('synchronous_commit', $16, true) FROM ks LEFT JOIN i ON true`
}

// The parts WriteIntentSQL and writeSpotCloseIntentSQL share: the intent's
// columns and values ($1–$15, and $18 the arming's ID), how an existing
// intent is armed again (intentArmSQL, $17 the attempts the caller read),
// and its dispatch_started event.
const (
	intentInsertColumns = `(client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange,
                                  symbol, action, order_spec, signal, source_ip, signal_time, received_at, execution, arm_id)`
	intentInsertValuesList = `$1, $2, $3, $4, $5::text, $6::text, $7, $8, $9, $10, $11, $12, $13, $14, $15, $18`
	intentInsertValues     = `(` + intentInsertValuesList + `)`
	intentArmSQL           = `ON CONFLICT (client_order_id) DO UPDATE
    SET trace_id = excluded.trace_id, fingerprint = excluded.fingerprint, mode = excluded.mode,
        key_source = excluded.key_source, exchange = excluded.exchange, symbol = excluded.symbol,
        action = excluded.action, order_spec = excluded.order_spec, signal = excluded.signal,
        source_ip = excluded.source_ip, signal_time = excluded.signal_time, received_at = excluded.received_at,
        sent_at = now(), attempts = dispatch_intents.attempts + 1, outcome = NULL, settled_at = NULL,
        asked_at = NULL, arm_id = excluded.arm_id
    WHERE (dispatch_intents.outcome IS NULL OR dispatch_intents.outcome IN ('unsent', 'not_placed'))
      AND dispatch_intents.attempts = $17
    RETURNING trace_id, sent_at, attempts`
	intentStartedSQL = `
    INSERT INTO trace_events (trace_id, event, source_ip, detail)
    SELECT trace_id, 'dispatch_started', $12, jsonb_build_object('client_order_id', $1::text) FROM i
`
)

// writeSpotCloseIntentSQL is WriteIntentSQL for a spot close that read
// the ledger ($19–$22: the entry's key, $23: the version it read): the
// entry's version row (spot_ledger_versions, 00037; ensureLedgerVersionSQL
// creates it) is locked and the intent written only while the version is
// still $23, and the version is bumped only when the intent was written —
// either both or neither. The version row is locked by nothing but other
// closes' intent writes, never by a fill's trigger (which a claim may
// hold: a window-mode execution recovering the earlier one's sell);
// WriteIntent bounds its wait for it by spotCloseLockWait.
// It reads the kill switch as WriteIntentHaltedSQL does (a spot close has
// always called the venue since its claim: its symbol's rules, its
// balance): while it is engaged neither the intent nor the version's bump
// is written.
var writeSpotCloseIntentSQL = haltableIntentSQL(`
WITH ks AS (
    SELECT ` + killSwitchEngagedSQL + ` AS engaged
), l AS (
    SELECT 1 FROM spot_ledger_versions
    WHERE exchange = $19 AND mode = $20 AND symbol = $21 AND strategy = $22 AND closes = $23
    FOR UPDATE
), i AS (
    INSERT INTO dispatch_intents ` + intentInsertColumns + `
    SELECT ` + intentInsertValuesList + ` FROM l, ks WHERE NOT ks.engaged
    ` + intentArmSQL + `
), v AS (
    UPDATE spot_ledger_versions SET closes = closes + 1
    WHERE exchange = $19 AND mode = $20 AND symbol = $21 AND strategy = $22 AND EXISTS (SELECT FROM i)
), ev AS (` + intentStartedSQL + `)`)

// ensureLedgerVersionSQL creates the version row of an existing ledger
// entry ($1–$4) at version 0 when no close wrote one yet, in the intent's
// implicit transaction, just before writeSpotCloseIntentSQL. It reads the
// entry without locking it.
const ensureLedgerVersionSQL = `
INSERT INTO spot_ledger_versions (exchange, mode, symbol, strategy, closes)
SELECT $1, $2, $3, $4, 0
WHERE EXISTS (SELECT 1 FROM spot_ledger WHERE exchange = $1 AND mode = $2 AND symbol = $3 AND strategy = $4)
ON CONFLICT (exchange, mode, symbol, strategy) DO NOTHING`

// spotCloseLockWait bounds writeSpotCloseIntentSQL's wait for the
// entry's row lock.
const spotCloseLockWait = "5s"

// WriteIntent commits the intent and its dispatch_started event on a
// connection of pool (not the claim's: the claim commits only after the
// venue answers), in one round trip. durable asks for a synchronous commit;
// only a venue whose own write lands later in the same Postgres WAL (paper)
// may pass false. A spot close that read the ledger (in.Ledger) writes
// through writeSpotCloseIntentSQL instead, which reads the kill switch;
// every other order through WriteIntentSQL, unchanged, or after a venue
// call since the claim (in.AfterVenueCall) WriteIntentHaltedSQL, which
// reads it too. ErrKillSwitch says it was engaged: nothing was written.
func WriteIntent(ctx context.Context, pool *pgxpool.Pool, in *Intent, durable bool) error {
	spec, err := json.Marshal(in.Order)
	if err != nil {
		return fmt.Errorf("encode intent: %w", err)
	}
	var signalTime *time.Time
	if !in.SignalTime.IsZero() {
		signalTime = &in.SignalTime
	}
	if in.ArmID == 0 {
		in.ArmID = NewArmID()
	}
	found := false
	// The commit's setting is explicit either way: the server's default
	// may be off.
	commit := "off"
	if durable {
		commit = "on"
	}
	args := []any{in.ClientOrderID, in.LockKey, in.TraceID, in.Fingerprint, in.Mode, in.KeySource,
		in.Exchange, in.Order.Symbol, in.Order.Action, spec, in.Signal, addrArg(in.SourceIP), signalTime, in.ReceivedAt, in.Execution,
		commit, in.Armed, in.ArmID}
	b := &pgx.Batch{}
	query, haltable := WriteIntentSQL, in.AfterVenueCall
	if in.AfterVenueCall {
		query = WriteIntentHaltedSQL
	}
	if l := in.Ledger; l != nil {
		// One implicit transaction: the lock_timeout holds for the write.
		b.Queue("SELECT set_config('lock_timeout', $1, true)", spotCloseLockWait)
		b.Queue(ensureLedgerVersionSQL, l.Exchange, l.Mode, l.Symbol, l.Strategy)
		query, haltable = writeSpotCloseIntentSQL, true
		args = append(args, l.Exchange, l.Mode, l.Symbol, l.Strategy, l.Closes)
	}
	halted := false
	b.Queue(query, args...).
		Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var setting string
				if !haltable {
					found = true
					if err := rows.Scan(&in.SentAt, &in.Attempts, &setting); err != nil {
						return err
					}
					continue
				}
				var sentAt *time.Time
				var attempts *int
				if err := rows.Scan(&halted, &sentAt, &attempts, &setting); err != nil {
					return err
				}
				if sentAt != nil && attempts != nil {
					found, in.SentAt, in.Attempts = true, *sentAt, *attempts
				}
			}
			return rows.Err()
		})
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		return translate(err)
	}
	if halted {
		return fmt.Errorf("intent %s: %w", in.ClientOrderID, ErrKillSwitch)
	}
	if !found {
		return fmt.Errorf("intent %s: %w", in.ClientOrderID, ErrIntentConsumed)
	}
	return nil
}

// SettleIntentSQL closes an intent with its outcome.
const SettleIntentSQL = `
UPDATE dispatch_intents SET outcome = $2::text, settled_at = now() WHERE client_order_id = $1`

// SettleIntent closes an intent outside a claim transaction — after a
// rollback that proved nothing was sent, or a key reuse — with its events.
// It commits synchronously like every intent write (losing an `unsent`
// would cost only a venue lookup, but a lost `key_reused` could let the
// sweeper record another signal's order under the key).
func SettleIntent(ctx context.Context, pool *pgxpool.Pool, clientOrderID string, outcome IntentOutcome, events ...Event) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(SyncCommitSQL)
	b.Queue(SettleIntentSQL, clientOrderID, outcome)
	queueEvents(b, events)
	return sendTx(ctx, pool, b)
}

// SettleAttemptSQL closes the intent an attempt armed ($1, armed $3 times
// under the arming's ID $8) with outcome $2 and appends the attempt's
// event ($4–$7: trace ID, event, source IP, detail), only while the intent
// is still that attempt's arming: open, and not armed since by another
// attempt (whose outcome must not be overwritten), nor armed by another
// attempt in its stead (the same attempts, another ID).
const SettleAttemptSQL = `
WITH u AS (
    UPDATE dispatch_intents SET outcome = $2::text, settled_at = now()
    WHERE client_order_id = $1 AND outcome IS NULL AND attempts = $3 AND arm_id = $8
    RETURNING 1
)
INSERT INTO trace_events (trace_id, event, source_ip, detail)
SELECT $4, $5, $6, coalesce($7, '{}'::jsonb) FROM u`

// SettleAttempt closes the intent of an attempt whose claim is about to
// roll back (nothing sent: unsent; another order under the ID: key_reused)
// with ev, synchronously, unless the intent is not that attempt's arming
// (attempts, as WriteIntent read it back or, after a write whose outcome
// is unknown, Armed+1; armID, Intent.ArmID): then nothing is written, and
// settled is false. An attempt's claim may have lost its connection, and
// with it the trace's lock, while the venue call ran; the attempt that
// claimed next owns the intent now. And of two attempts that read the
// intent armed the same number of times (one whose claim's lock was lost,
// one that claimed next), the one whose write failed may not know that
// the other's committed: only armID tells the other's arming from its own.
func SettleAttempt(ctx context.Context, pool *pgxpool.Pool, clientOrderID string, attempts int, armID int64, outcome IntentOutcome, ev Event) (settled bool, err error) {
	var detail any
	if ev.Detail != nil {
		detail = ev.Detail
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(SyncCommitSQL)
	b.Queue(SettleAttemptSQL, clientOrderID, outcome, attempts, ev.TraceID, ev.Event, addrArg(ev.SourceIP), detail, armID).
		Exec(func(ct pgconn.CommandTag) error {
			settled = ct.RowsAffected() == 1
			return nil
		})
	return settled, sendTx(ctx, pool, b)
}

// NewArmID returns a random, non-zero arming ID (Intent.ArmID).
func NewArmID() int64 {
	return rand.Int64N(math.MaxInt64) + 1
}

// sendTx sends b, which opens a transaction with BEGIN, then COMMIT, on one
// connection of pool: one round trip. On an error the transaction is
// rolled back before the connection goes back to the pool.
func sendTx(ctx context.Context, pool *pgxpool.Pool, b *pgx.Batch) error {
	b.Queue("COMMIT")
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return translate(err)
	}
	defer conn.Release()
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		return translate(err)
	}
	return nil
}

// TouchIntent re-arms the intent of a reconciling trace before its order is
// sent again, durably (q must not be the reconcile's own transaction), so
// the accept window restarts from this send. The intent stays owned by the
// reconcile (outcome reconciling): the sweeper leaves it alone. It re-arms
// only an intent still reconciling and armed exactly armed times, as the
// reconcile read it under the trace's lock (ReconcileState.Attempts): if
// that lock's session was lost meanwhile, another run of the reconcile may
// have re-armed and sent it, or the sweeper settled it, and this run must
// not send (ErrIntentConsumed). It re-arms nothing while the kill switch is
// engaged, read in the same statement (ErrKillSwitch): the reconcile's own
// reading, under the lock, is as old as its venue lookup.
func TouchIntent(ctx context.Context, q DBTX, clientOrderID string, armed int) (time.Time, error) {
	var sentAt time.Time
	// One implicit transaction (no BEGIN), synchronous whatever the
	// server's default.
	b := &pgx.Batch{}
	b.Queue(SyncCommitSQL)
	halted := false
	var at *time.Time
	b.Queue(touchIntentSQL, clientOrderID, armed).QueryRow(func(row pgx.Row) error {
		return row.Scan(&halted, &at)
	})
	err := q.SendBatch(ctx, b).Close()
	if err == nil && halted {
		return time.Time{}, fmt.Errorf("intent %s: %w", clientOrderID, ErrKillSwitch)
	}
	if err == nil && at == nil {
		err = pgx.ErrNoRows
	}
	if at != nil {
		sentAt = *at
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, fmt.Errorf("intent %s: %w", clientOrderID, ErrIntentConsumed)
	}
	if err != nil {
		return time.Time{}, translate(err)
	}
	return sentAt, nil
}

const touchIntentSQL = `
WITH ks AS (
    SELECT ` + killSwitchEngagedSQL + ` AS engaged
), u AS (
    UPDATE dispatch_intents SET sent_at = now(), attempts = attempts + 1, outcome = 'reconciling', settled_at = NULL, asked_at = NULL
    WHERE client_order_id = $1 AND outcome = 'reconciling' AND attempts = $2 AND NOT (SELECT engaged FROM ks)
    RETURNING sent_at
)
SELECT (SELECT engaged FROM ks), (SELECT sent_at FROM u)`

// intentColumns are read by every query that returns an Intent.
const intentColumns = `client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange,
       order_spec, signal, source_ip, signal_time, received_at, sent_at, attempts,
       (extract(epoch FROM clock_timestamp() - sent_at) * 1000000)::bigint`

func scanIntent(row pgx.Row) (Intent, error) {
	var in Intent
	err := scanIntentWith(row, &in)
	return in, err
}

// scanIntentWith scans intentColumns into in, then extra columns into
// extra.
func scanIntentWith(row pgx.Row, in *Intent, extra ...any) error {
	var (
		spec       []byte
		sourceIP   *netip.Addr
		signalTime *time.Time
		sentAgo    int64
	)
	dest := append([]any{&in.ClientOrderID, &in.LockKey, &in.TraceID, &in.Fingerprint, &in.Mode, &in.KeySource,
		&in.Exchange, &spec, &in.Signal, &sourceIP, &signalTime, &in.ReceivedAt, &in.SentAt, &in.Attempts, &sentAgo}, extra...)
	if err := row.Scan(dest...); err != nil {
		*in = Intent{}
		return err
	}
	in.SentAgo = time.Duration(sentAgo) * time.Microsecond
	if err := json.Unmarshal(spec, &in.Order); err != nil {
		return fmt.Errorf("intent %s: decode order: %w", in.ClientOrderID, err)
	}
	if sourceIP != nil {
		in.SourceIP = *sourceIP
	}
	if signalTime != nil {
		in.SignalTime = *signalTime
	}
	return nil
}

// GetIntent reads one intent by client order ID, or ErrNotFound.
func GetIntent(ctx context.Context, q DBTX, clientOrderID string) (Intent, error) {
	in, err := scanIntent(q.QueryRow(ctx, `SELECT `+intentColumns+` FROM dispatch_intents WHERE client_order_id = $1`, clientOrderID))
	if err != nil {
		return Intent{}, translate(err)
	}
	return in, nil
}

// AppendEvent commits one audit event outside any trace transaction (a
// venue refusing hoox's credentials), with hook run before the commit.
func AppendEvent(ctx context.Context, pool *pgxpool.Pool, e Event, hook TxHook) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueEvents(b, []Event{e})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return runHooks(ctx, tx, []TxHook{hook})
	})
	return translate(err)
}
