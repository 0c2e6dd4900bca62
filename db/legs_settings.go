package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hoox/hoox/exchange"
)

// positionSettingLockSQL takes the transaction-scoped lock of one
// position's settings: $1 the venue, $2 the mode, $3 the symbol's key
// (exchange.SymbolKey). The "setting:" prefix keeps it apart from every
// trace's lock key.
const positionSettingLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('setting:' || $1 || ':' || $2 || ':' || $3, 0))`

// LockPositionSetting takes, in q's transaction and under its
// lock_timeout (else ErrLockTimeout), the lock of the settings of the
// position in symbol at venue exchangeName and mode (exchange.SettingExiter:
// a Bybit linear trailing stop). A setting has no ID, so a leg's lookup
// cannot tell it from a later leg's: every party that sets one (a leg's
// send, until its record commits), clears one for a cancel signal, or
// acts on one for a leg a cancel marked holds this lock, so none of them
// acts on a setting another is placing and has not recorded yet.
func LockPositionSetting(ctx context.Context, q DBTX, exchangeName, mode, symbol string) error {
	if _, err := q.Exec(ctx, positionSettingLockSQL, exchangeName, mode, exchange.SymbolKey(symbol)); err != nil {
		return fmt.Errorf("lock the %s position's settings: %w", symbol, translate(err))
	}
	return nil
}

// LockPositionSetting takes LockPositionSetting's lock for leg's position
// in the pass's transaction, held until the pass ends.
func (t *LegsTx) LockPositionSetting(ctx context.Context, leg Leg) error {
	return LockPositionSetting(ctx, t.tx, leg.Exchange, leg.Mode, leg.Order.Symbol)
}

// laterSettingLegsSQL lists the legs of venue $1, mode $2 and role $3,
// other than $4, armed after $4 was last sent, with the symbol of the
// entry each protects.
const laterSettingLegsSQL = `SELECT l.client_order_id, o.symbol FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
WHERE l.exchange = $1 AND l.mode = $2 AND l.role = $3 AND l.client_order_id <> $4
  AND l.sent_at > coalesce((SELECT sent_at FROM order_legs WHERE client_order_id = $4), '-infinity')
ORDER BY l.sent_at, l.client_order_id`

// LaterSettingLeg returns the client order ID of a leg of the same venue,
// mode, role and symbol as leg (a position setting: exchange.SettingExiter)
// that was armed after leg was last sent, or "" when none was. Once one
// was, the position's setting may be that leg's, and nothing found there
// can be said to be leg's own. Read under LockPositionSetting, so a leg
// armed and not recorded yet is seen (its arming commits before its send).
func LaterSettingLeg(ctx context.Context, q DBTX, leg Leg) (string, error) {
	rows, _ := q.Query(ctx, laterSettingLegsSQL, leg.Exchange, leg.Mode, leg.Role, leg.ClientOrderID)
	type later struct{ id, symbol string }
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (later, error) {
		var l later
		err := row.Scan(&l.id, &l.symbol)
		return l, err
	})
	if err != nil {
		return "", fmt.Errorf("later setting legs than %s: %w", leg.ClientOrderID, translate(err))
	}
	for _, l := range all {
		if exchange.SameSymbol(l.symbol, leg.Order.Symbol) {
			return l.id, nil
		}
	}
	return "", nil
}

// LaterSettingLeg is LaterSettingLeg read in the pass's transaction.
func (t *LegsTx) LaterSettingLeg(ctx context.Context, leg Leg) (string, error) {
	return LaterSettingLeg(ctx, t.tx, leg)
}

// SettleLegIn records, in q (a transaction the caller commits: a cancel
// signal's claim), leg's order (when row is not nil) with outcome and
// events, as LegsTx.Settle does, only while the leg's outcome is still
// as read (leg.Outcome). The caller must hold the leg's trace lock, as
// MarkCancelledExitLegs leaves it held.
func SettleLegIn(ctx context.Context, q DBTX, leg Leg, row *OrderRow, outcome IntentOutcome, events []Event) error {
	b := &pgx.Batch{}
	queueSettleLeg(b, leg, row, outcome, events)
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("settle leg %s: %w", leg.ClientOrderID, translate(err))
	}
	return nil
}

// symbolKeySQL is exchange.SymbolKey of the text column col, in SQL: the
// instrument with an exchange prefix ("BYBIT:"), a ".P" suffix, the
// separators "/", "-", "_" and then a "SWAP" suffix dropped, upper-cased.
// It is exact for the symbols hoox records (a signal's: 1-32 of
// A-Za-z0-9._:/-, signal.NormalizeSymbol; a venue's: the same charset),
// where Postgres's upper and Go's strings.ToUpper agree. The vertical tab
// is written \x0B: Postgres's escape strings know no \v, which would be a
// literal 'v' trimmed off "vetusdt".
func symbolKeySQL(col string) string {
	return `regexp_replace(regexp_replace(regexp_replace(regexp_replace(upper(btrim(` + col + `, E' \t\n\r\x0B\f')),
  '^.*:', ''), '\.P$', ''), '[/_-]', '', 'g'), 'SWAP$', '')`
}

// positionClosedSinceSQL finds a close at venue $1 and mode $2 of the
// instrument whose key (exchange.SymbolKey) is $4 that filled and left the
// position flat (its dispatched event says position_closed:
// exchange.Report.PositionClosed) and whose dispatch started after the leg
// $3 was last sent: its fill, which flattened the position, came after
// that send. The search starts from the dispatch_started events since the
// send (trace_events_at_idx), not from the order row's created_at: that is
// its claim transaction's start, which on a venue that splits closes
// precedes the claim's position read, so a setting sent while the close's
// claim was open would be missed. The order row's created_at only bounds
// the search (a claim lasts seconds, not an hour), so that the plan need
// not read every close ever recorded. The symbol is compared here, not after a
// page of every symbol's closes: on an account trading many symbols, the
// leg's own close may come after any number of others.
var positionClosedSinceSQL = `SELECT o.client_order_id FROM trace_events s
JOIN orders o ON o.client_order_id = s.detail->>'client_order_id' AND o.trace_id = s.trace_id
WHERE s.event = '` + EventDispatchStarted + `' AND s.at > (SELECT sent_at FROM order_legs WHERE client_order_id = $3)
  AND o.exchange = $1 AND o.mode = $2 AND o.action IN ('close', 'close_long', 'close_short') AND o.status = 'filled'
  AND ` + symbolKeySQL("o.symbol") + ` = $4
  AND o.created_at > (SELECT sent_at FROM order_legs WHERE client_order_id = $3) - interval '1 hour'
  AND EXISTS (SELECT FROM trace_events d WHERE d.trace_id = o.trace_id AND d.event = '` + EventDispatched + `'
    AND d.detail->>'client_order_id' = o.client_order_id AND d.detail->>'position_closed' = 'true')
ORDER BY s.at, o.client_order_id LIMIT 1`

// PositionClosedSince returns the client order ID of a close of leg's
// symbol, at its venue and mode, that began after leg (a position setting:
// exchange.SettingExiter) was last sent and left the position flat, or ""
// when there is none. A setting the venue drops with its position (a Bybit
// trailing stop) then ended with it, whatever the position holds now: a
// later entry's leg may have set the same value on the next position.
func PositionClosedSince(ctx context.Context, q DBTX, leg Leg) (string, error) {
	var id string
	err := q.QueryRow(ctx, positionClosedSinceSQL, leg.Exchange, leg.Mode, leg.ClientOrderID, exchange.SymbolKey(leg.Order.Symbol)).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("closes of the position since %s: %w", leg.ClientOrderID, translate(err))
	}
	return id, nil
}

// LiveExit is an exit of an entry that may rest at the venue or still be
// placed: an exit order recorded open, or an exit leg not settled (or
// failed with its order unknown) that no cancel marked. A cancel naming a
// strategy reads them to tell whether a setting of the position
// (exchange.SettingExiter) is another strategy's too (LiveExits).
type LiveExit struct {
	// ClientOrderID is the exit's own client order ID.
	ClientOrderID string
	// Symbol is the entry's symbol in the venue's spelling.
	Symbol string
	// Role is the exit's role (exchange.RoleTrailingStop, …).
	Role string
	// Strategy is the recorded strategy of the exit (its entry's, for a
	// leg not recorded yet); nil when recorded without one.
	Strategy *string
}

// liveExitsSQL lists LiveExits: venue $1, mode $2.
const liveExitsSQL = `
SELECT l.client_order_id, o.symbol, l.role, o.strategy FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
WHERE (l.outcome IS NULL OR l.outcome = 'failed') AND l.cancelled_by IS NULL AND l.exchange = $1 AND l.mode = $2
  AND l.role IN ` + exitRolesSQL + `
UNION
SELECT o.client_order_id, o.symbol, o.role, o.strategy FROM orders o
WHERE o.status = 'open' AND o.exchange = $1 AND o.mode = $2 AND o.role IN ` + exitRolesSQL + `
ORDER BY 1`

// LiveExits returns the live exits (LiveExit) of venue exchangeName and
// mode, in q.
func LiveExits(ctx context.Context, q DBTX, exchangeName, mode string) ([]LiveExit, error) {
	rows, _ := q.Query(ctx, liveExitsSQL, exchangeName, mode)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (LiveExit, error) {
		var e LiveExit
		err := row.Scan(&e.ClientOrderID, &e.Symbol, &e.Role, &e.Strategy)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("live exits: %w", translate(err))
	}
	return out, nil
}

// plannedExitsSQL counts the exits hoox has planned at venue $1 and mode
// $2 (on the instrument whose key is $3, or every one when $3 is empty) that
// are not at the venue yet: exit legs not sent (nor settled, nor marked by
// a cancel or a close), and the planned exits of entries resting open
// and still followed whose legs are not written yet (a limit entry's,
// written when it fills: plan_order_legs_of). An entry no longer followed
// (unfollowed_at: its trace purged or released) gets no exits from hoox.
var plannedExitsSQL = `SELECT
  (SELECT count(*) FROM order_legs l JOIN orders p ON p.client_order_id = l.parent_client_order_id
   WHERE l.exchange = $1 AND l.mode = $2 AND l.outcome IS NULL AND l.sent_at IS NULL AND l.cancelled_by IS NULL
     AND l.role IN ` + exitRolesSQL + `
     AND ($3 = '' OR ` + symbolKeySQL("p.symbol") + ` = $3))
+ (SELECT count(*) FROM orders o
   JOIN dispatch_intents i ON i.client_order_id = o.client_order_id
   CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(i.order_spec->'Legs') = 'array' THEN i.order_spec->'Legs' ELSE '[]'::jsonb END) g(leg)
   WHERE o.status = 'open' AND o.role = 'primary' AND o.unfollowed_at IS NULL AND o.exchange = $1 AND o.mode = $2
     AND g.leg->>'Role' IN ` + exitRolesSQL + `
     AND NOT EXISTS (SELECT FROM order_legs l WHERE l.parent_client_order_id = o.client_order_id)
     AND ($3 = '' OR ` + symbolKeySQL("o.symbol") + ` = $3))`

// PlannedExits counts the exits hoox has planned at venue exchangeName
// and mode on symbol's instrument (every instrument when symbol is "")
// that are not at the venue yet (plannedExitsSQL): a cap the venue counts
// from what rests there now (exchange.ExitCap.Planned) must count them too.
func PlannedExits(ctx context.Context, q DBTX, exchangeName, mode, symbol string) (int, error) {
	key := ""
	if symbol != "" {
		key = exchange.SymbolKey(symbol)
	}
	var n int
	if err := q.QueryRow(ctx, plannedExitsSQL, exchangeName, mode, key).Scan(&n); err != nil {
		return 0, fmt.Errorf("planned exits at %s: %w", exchangeName, translate(err))
	}
	return n, nil
}
