package db

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/internal/pgconv"
)

// LedgerKey names one entry of the spot ledger: what one strategy holds of
// one symbol on one venue (as the trace records it) and mode.
type LedgerKey struct {
	Exchange string `db:"exchange"`
	Mode     string `db:"mode"`
	Symbol   string `db:"symbol"`
	Strategy string `db:"strategy"`
}

// LedgerEntry is one row of the spot ledger.
type LedgerEntry struct {
	LedgerKey
	// Quantity is the base quantity the strategy holds through hoox;
	// zero while a sale recorded before the fill of a buy of the strategy
	// still open keeps the stored entry below zero (migration 00034).
	Quantity  decimal.Decimal `db:"quantity"`
	UpdatedAt time.Time       `db:"updated_at"`
	// UpdatedBy is "fill" when an order's fill last moved the entry, else
	// the operator who set it.
	UpdatedBy string `db:"updated_by"`
	// Released lists, for SetLedger's answer only, the reservations the
	// set ended: the entry's sells that had ended failed with their
	// order unknown.
	Released []ReleasedSell `db:"-"`
}

// ReleasedSell is a sell of an entry whose reservation an operator's
// SetLedger ended: an intent (Role "primary") or a close part that ended
// failed with its order unknown.
type ReleasedSell struct {
	TraceID       string `json:"trace_id"`
	ClientOrderID string `json:"client_order_id"`
	Role          string `json:"role"`
	// Quantity is what it reserved: an intent's with the parts it planned.
	Quantity string `json:"quantity"`
}

// LedgerTraceID is the audit trail's trace ID for operators' changes to
// the spot ledger; the admin: prefix cannot come from a signal.
const LedgerTraceID = "admin:ledger"

// EventLedgerSet is the audit event of an operator's change to a ledger
// entry.
const EventLedgerSet = "ledger_set"

// EventLedgerReleased is the audit event, on a sell's own trace, of an
// operator's change to its ledger entry that ended the sell's reservation
// (SetLedger).
const EventLedgerReleased = "ledger_released"

// LockLedgerSQL serialises spot closes of one ledger entry for the rest
// of the claim's transaction: a second close of the same strategy's
// holding reads the ledger only after the first close's fill is recorded
// (the trigger moves the entry in the first close's commit), so two closes
// never both sell the same holding. Buys do not take it: their trigger
// update only waits for the entry's row lock at the moment of a commit.
const LockLedgerSQL = `SELECT pg_advisory_xact_lock(hashtextextended('spot_ledger:' || $1 || ':' || $2 || ':' || $3 || ':' || $4, 0))`

// intentSellsSQL is what a spot sell's intent (i) may sell: its own
// quantity and the further parts it planned (a split close).
const intentSellsSQL = `(i.order_spec->>'Quantity')::numeric
                            + coalesce((SELECT sum((l.leg->'Order'->>'Quantity')::numeric)
                                          FROM jsonb_array_elements(CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array'
                                                                         THEN i.order_spec->'Legs' ELSE '[]'::jsonb END) AS l(leg)), 0)`

// intentOfEntrySQL selects the spot sells' intents (i) of the entry $1–$4.
const intentOfEntrySQL = `i.exchange = $1 AND i.mode = $2 AND i.order_spec->>'Side' = 'sell'
                    AND i.order_spec->'Ledger'->>'symbol' = $3 AND i.order_spec->'Ledger'->>'strategy' = $4`

// legOfEntrySQL selects the spot sells' legs of the entry $1–$4.
const legOfEntrySQL = `exchange = $1 AND mode = $2 AND order_spec->>'Side' = 'sell'
                    AND order_spec->'Ledger'->>'symbol' = $3 AND order_spec->'Ledger'->>'strategy' = $4`

// readLedgerSQL reads the entry, the sells it reserves (LedgerHolding.
// Unrecorded) and its version. Intents open or reconciling and those
// failed with their order unknown are summed apart, so each sum reads its
// own partial index (dispatch_intents_open_idx, dispatch_intents_unknown_idx).
const readLedgerSQL = `
SELECT coalesce(greatest(e.quantity, 0), 0),
       coalesce((SELECT sum(` + intentSellsSQL + `)
                  FROM dispatch_intents i
                  WHERE (i.outcome IS NULL OR i.outcome = 'reconciling') AND ` + intentOfEntrySQL + `), 0)
     + coalesce((SELECT sum(` + intentSellsSQL + `)
                  FROM dispatch_intents i
                  WHERE i.outcome = 'failed' AND i.ledger_released_by IS NULL AND ` + intentOfEntrySQL + `), 0)
     + coalesce((SELECT sum((order_spec->>'Quantity')::numeric) FROM order_legs
                  WHERE (outcome IS NULL OR (outcome = 'failed' AND role = 'close_part' AND cancelled_by IS NULL))
                    AND ` + legOfEntrySQL + `), 0)
     + coalesce((SELECT sum(quantity - coalesce(filled_quantity, 0)) FROM orders
                  WHERE exchange = $1 AND mode = $2 AND symbol = $3 AND status = 'open'
                    AND base_asset IS NOT NULL AND side = 'sell' AND coalesce(strategy, '') = $4), 0),
       coalesce((SELECT v.closes FROM spot_ledger_versions v
                 WHERE v.exchange = $1 AND v.mode = $2 AND v.symbol = $3 AND v.strategy = $4), 0)
FROM (SELECT) one
LEFT JOIN spot_ledger e ON e.exchange = $1 AND e.mode = $2 AND e.symbol = $3 AND e.strategy = $4`

// LedgerHolding is what a spot close reads of its strategy's entry.
type LedgerHolding struct {
	// Quantity is the entry: what the recorded fills (and operators) say
	// the strategy holds, never below zero.
	Quantity decimal.Decimal
	// Unrecorded is the quantity of the strategy's sells of this holding
	// that were sent but are not recorded yet (the intent of an attempt
	// that died, or of a lost answer being reconciled, with the further
	// parts it planned; the parts of a split spot close not settled yet):
	// they may have sold part of Quantity already, or are about to, so a
	// close counts them as sold. A sell that ended failed with its order
	// unknown — an intent (a missed trade, a reconcile given up: the
	// sweeper asks about it, ListUnknown) or a close part (ListUnknownLegs)
	// — counts too until it is decided: found (its fill then moves the
	// entry), proven absent, or released by an operator's SetLedger of the
	// entry, which says what the strategy holds having checked the venue.
	// It may be found executed, or a part be opened again and sent
	// (AskUnknown), and a close that sold its coins meanwhile would leave
	// it another holder's to sell. A failed exit (a missed stop-loss, take-profit or
	// OCO list) does not: at Binance spot it stays unknown for ever, and
	// reserving it would refuse every later close ("cancel then close"
	// sells what the entry bought); a cancel marks it, and hoox cancels it
	// if it turns up. It also holds what the strategy's sells
	// recorded open have yet to sell (an OCO list or exit order resting,
	// a limit sell): the venue locks those coins, so the free balance a
	// close reads is other holders' coins, never the strategy's.
	Unrecorded decimal.Decimal
	// Closes is the entry's version: how many closes of it wrote their
	// intent (spot_ledger_versions.closes). The close's intent is written only if
	// it is still this (Intent.Ledger).
	Closes int64
}

// LedgerVersion is what a spot close read of its entry under the
// ledger's lock, for its intent (Intent.Ledger): the entry and its
// version.
type LedgerVersion struct {
	LedgerKey
	Closes int64
}

// LockLedger takes the close's lock on k (LockLedgerSQL) and reads what
// the strategy holds; zero when it never held any. q is the claim's
// transaction: the lock lasts until it ends, and waits at most its
// lock_timeout (ErrLockTimeout). The lock is the session's: the close
// writes its intent with the version read here (Intent.Ledger), which
// stops it should the session, and the lock, be lost meanwhile.
func LockLedger(ctx context.Context, q DBTX, k LedgerKey) (LedgerHolding, error) {
	if _, err := q.Exec(ctx, LockLedgerSQL, k.Exchange, k.Mode, k.Symbol, k.Strategy); err != nil {
		return LedgerHolding{}, fmt.Errorf("lock spot ledger: %w", translate(err))
	}
	var h LedgerHolding
	if err := q.QueryRow(ctx, readLedgerSQL, k.Exchange, k.Mode, k.Symbol, k.Strategy).Scan(&h.Quantity, &h.Unrecorded, &h.Closes); err != nil {
		return LedgerHolding{}, fmt.Errorf("read spot ledger: %w", translate(err))
	}
	return h, nil
}

// LedgerFilter narrows ListLedger; empty fields match everything.
type LedgerFilter struct {
	Exchange, Mode, Symbol string
	// Strategy filters on the strategy when set (HasStrategy): "" is a
	// strategy of its own (signals without one).
	Strategy    string
	HasStrategy bool
}

const listLedgerSQL = `
SELECT exchange, mode, symbol, strategy, greatest(quantity, 0) AS quantity, updated_at, updated_by
FROM spot_ledger
WHERE ($1::text IS NULL OR exchange = $1)
  AND ($2::text IS NULL OR mode = $2)
  AND ($3::text IS NULL OR symbol = $3)
  AND ($4::text IS NULL OR strategy = $4)
ORDER BY exchange, mode, symbol, strategy
LIMIT 1000`

// ListLedger returns the ledger's entries (at most 1000, in key order).
func ListLedger(ctx context.Context, q DBTX, f LedgerFilter) ([]LedgerEntry, error) {
	var strategy *string
	if f.HasStrategy {
		strategy = &f.Strategy
	}
	rows, err := q.Query(ctx, listLedgerSQL, nullText(f.Exchange), nullText(f.Mode), nullText(f.Symbol), strategy)
	if err != nil {
		return nil, fmt.Errorf("list spot ledger: %w", translate(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[LedgerEntry])
	if err != nil {
		return nil, fmt.Errorf("list spot ledger: %w", translate(err))
	}
	return out, nil
}

const ledgerHasExchangeSQL = `SELECT EXISTS (SELECT 1 FROM spot_ledger WHERE exchange = $1)`

// LedgerHasExchange reports whether the ledger holds any entry under
// exchange (on the primary key's leading column).
func LedgerHasExchange(ctx context.Context, q DBTX, exchange string) (bool, error) {
	var ok bool
	if err := q.QueryRow(ctx, ledgerHasExchangeSQL, exchange).Scan(&ok); err != nil {
		return false, fmt.Errorf("ledger has exchange: %w", translate(err))
	}
	return ok, nil
}

// seedLedgerEntrySQL creates an absent entry at 0 inside an operator's
// set (overwritten by setLedgerSQL before it commits), so that
// lockLedgerEntrySQL always has a row to lock: a set naming "was": "0" for
// an absent entry would otherwise find nothing to wait on while a first
// fill's insert was in flight, take 0 for the value it replaces and
// overwrite the fill once it committed.
const seedLedgerEntrySQL = `
INSERT INTO spot_ledger (exchange, mode, symbol, strategy, quantity, updated_at, updated_by)
VALUES ($1, $2, $3, $4, 0, now(), $5) ON CONFLICT (exchange, mode, symbol, strategy) DO NOTHING`

const lockLedgerEntrySQL = `
SELECT quantity FROM spot_ledger WHERE exchange = $1 AND mode = $2 AND symbol = $3 AND strategy = $4 FOR UPDATE`

const setLedgerSQL = `
INSERT INTO spot_ledger (exchange, mode, symbol, strategy, quantity, updated_at, updated_by)
VALUES ($1, $2, $3, $4, $5, now(), $6)
ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE
SET quantity = excluded.quantity, updated_at = excluded.updated_at, updated_by = excluded.updated_by
RETURNING updated_at`

// bumpLedgerVersionSQL moves an entry's version (spot_ledger_versions) on
// by one, creating it at 1.
const bumpLedgerVersionSQL = `
INSERT INTO spot_ledger_versions AS v (exchange, mode, symbol, strategy, closes)
VALUES ($1, $2, $3, $4, 1)
ON CONFLICT (exchange, mode, symbol, strategy) DO UPDATE SET closes = v.closes + 1`

// releaseLedgerSellsSQL ends the reservations of the entry's ($1–$4)
// sells that ended failed with their order unknown: intents (marked
// ledger_released_by $5) and close parts (marked cancelled_by $6, so the
// leg runner never sends one again — AskUnknown opens none — and cancels
// it at the venue if it turns up resting; a fill found is recorded, and
// moves the entry from the value set). Each gets an event on its own
// trace ($7: the reason); the released sells come back.
const releaseLedgerSellsSQL = `
WITH ri AS (
    UPDATE dispatch_intents i SET ledger_released_by = $5
    WHERE i.outcome = 'failed' AND i.ledger_released_by IS NULL AND ` + intentOfEntrySQL + `
    RETURNING i.trace_id, i.client_order_id, 'primary'::text AS role, ` + intentSellsSQL + ` AS quantity
), rl AS (
    UPDATE order_legs SET cancelled_by = $6
    WHERE outcome = 'failed' AND role = 'close_part' AND cancelled_by IS NULL AND ` + legOfEntrySQL + `
    RETURNING trace_id, client_order_id, role, (order_spec->>'Quantity')::numeric AS quantity
), r AS (
    SELECT * FROM ri UNION ALL SELECT * FROM rl
), ev AS (
    INSERT INTO trace_events (trace_id, event, detail)
    SELECT trace_id, '` + EventLedgerReleased + `',
           jsonb_build_object('client_order_id', client_order_id, 'role', role, 'quantity', trim_scale(quantity)::text,
                              'by', $5::text, 'reason', 'an operator set what the strategy holds (' || $7::text
                                                         || '): this sell, its order unknown, no longer counts as sold')
    FROM r
)
SELECT trace_id, client_order_id, role, trim_scale(quantity)::text FROM r ORDER BY trace_id, client_order_id`

// SetLedger sets one entry to qty (zero resets it) on an operator's word
// — after a manual trade, a withdrawal, or to adopt holdings bought before
// hoox — and audits the change (old and new quantity, who, why) in the
// same transaction. Fills recorded later move the entry from the new
// value.
//
// The value is what the strategy holds now, as the operator checked it at
// the venue, so the sells of the entry that ended failed with their order
// unknown (a missed trade, a part given up) stop counting as sold: they are
// released (releaseLedgerSellsSQL; Released, the audit's released_sells).
// Nothing else ends such a reservation at a venue that never proves an
// order absent (Binance spot), and without it every later close of the
// strategy would stay short by it. Sells still in flight (open,
// reconciling) keep theirs: they are decided shortly.
func SetLedger(ctx context.Context, pool *pgxpool.Pool, k LedgerKey, qty decimal.Decimal, reason, by string) (LedgerEntry, error) {
	return SetLedgerIf(ctx, pool, k, nil, qty, reason, by)
}

// LedgerChangedError refuses a SetLedgerIf whose entry no longer holds the
// value the operator named: a fill (or another set) moved it since.
type LedgerChangedError struct {
	// Quantity is what the entry holds now (0 when it has no row).
	Quantity decimal.Decimal
}

func (e *LedgerChangedError) Error() string {
	return "the spot ledger entry holds " + e.Quantity.String() + " now"
}

// SetLedgerIf is SetLedger, refused with *LedgerChangedError unless the
// entry holds was (an absent entry holds 0) when its lock is taken; nil
// was sets whatever it holds. An operator's set names the value it saw,
// so a set retried or sent from an old listing never overwrites a fill
// recorded since.
func SetLedgerIf(ctx context.Context, pool Beginner, k LedgerKey, was *decimal.Decimal, qty decimal.Decimal, reason, by string) (LedgerEntry, error) {
	e := LedgerEntry{LedgerKey: k, Quantity: qty, UpdatedBy: by}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, SyncCommitSQL); err != nil {
			return err
		}
		// Lock first, so the audit's "was" is the value this change
		// replaced, whatever fills commit meanwhile.
		if _, err := tx.Exec(ctx, seedLedgerEntrySQL, k.Exchange, k.Mode, k.Symbol, k.Strategy, by); err != nil {
			return err
		}
		var held decimal.Decimal
		if err := tx.QueryRow(ctx, lockLedgerEntrySQL, k.Exchange, k.Mode, k.Symbol, k.Strategy).Scan(&held); err != nil {
			return err
		}
		// Compared as the listing shows it (ListLedger: never below 0;
		// an entry below 0 holds a sale recorded before its buy's fill).
		if shown := decimal.Max(held, decimal.Zero); was != nil && !shown.Equal(*was) {
			return &LedgerChangedError{Quantity: shown}
		}
		if err := tx.QueryRow(ctx, setLedgerSQL, k.Exchange, k.Mode, k.Symbol, k.Strategy, pgconv.Numeric(qty), by).Scan(&e.UpdatedAt); err != nil {
			return err
		}
		// A close that read the entry before this change (between its
		// ledger read and its intent) must not sell by the old value: the
		// version moves, so its intent is refused (503) and its resend
		// reads the new one.
		if _, err := tx.Exec(ctx, bumpLedgerVersionSQL, k.Exchange, k.Mode, k.Symbol, k.Strategy); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, releaseLedgerSellsSQL, k.Exchange, k.Mode, k.Symbol, k.Strategy, by, LedgerTraceID, reason)
		released, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ReleasedSell, error) {
			var r ReleasedSell
			err := row.Scan(&r.TraceID, &r.ClientOrderID, &r.Role, &r.Quantity)
			return r, err
		})
		if err != nil {
			return err
		}
		e.Released = released
		detail := map[string]any{"exchange": k.Exchange, "mode": k.Mode, "symbol": k.Symbol, "strategy": k.Strategy,
			"quantity": qty.String(), "by": by, "reason": reason}
		if len(released) > 0 {
			detail["released_sells"] = released
		}
		detail["was"] = held.String()
		_, err = tx.Exec(ctx, InsertEventSQL, LedgerTraceID, EventLedgerSet, nil, detail)
		return err
	})
	var changed *LedgerChangedError
	if errors.As(err, &changed) {
		return LedgerEntry{}, fmt.Errorf("set spot ledger: %w", err)
	}
	if err != nil {
		return LedgerEntry{}, fmt.Errorf("set spot ledger: %w", translate(err))
	}
	return e, nil
}
