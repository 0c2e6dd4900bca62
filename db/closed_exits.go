package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// closedExitLegsSQL lists the exit legs of venue $1 and mode $2 on symbol
// $3 (the entry's, in the venue's spelling) and side $4 (the exit's:
// sell for a long's) that were planned before the close $5 read the
// position (closeCutOffSQL, Postgres's clock), so they protected the
// position it closed, and whose order is not
// settled: open (sent or not) or failed with it unknown, not marked
// yet. With their trace's lock key.
var closedExitLegsSQL = `SELECT l.client_order_id, l.lock_key FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
WHERE (l.outcome IS NULL OR l.outcome = 'failed') AND l.cancelled_by IS NULL AND l.exchange = $1 AND l.mode = $2
  AND o.symbol = $3 AND l.order_spec->>'Side' = $4
  AND l.role IN ` + exitRolesSQL + `
  AND l.created_at < (` + closeCutOffSQL("$6") + `)
ORDER BY l.created_at, l.client_order_id`

// closeCutOffSQL is when the close $5 read the position it closed, at the
// latest, on Postgres's clock: its intent's arming (sent_at), except for a
// close sized before its intent (Partial: a percent_of_position share)
// after which the venue read a position open beside it (param, true:
// exchange.Report.EntryBeside): then its claim's start (the order row's
// created_at, its claim transaction's now()), which comes before the
// sizing read, so an entry that filled beside the close keeps its exits.
// Without an entry beside, the position was flat after the close: every
// exit of its side planned before the intent protected what it closed,
// even one whose entry's fill was recorded during the close's claim.
func closeCutOffSQL(param string) string {
	return `SELECT CASE WHEN ` + param + ` AND c.created_at IS NOT NULL THEN least(c.created_at, i.sent_at) ELSE i.sent_at END
  FROM dispatch_intents i LEFT JOIN orders c ON c.client_order_id = i.client_order_id WHERE i.client_order_id = $5`
}

// markClosedExitLegsSQL marks the legs $1 as ended by the close $2 (the
// close's trace), each only while it may still rest at the venue: armed
// and open, or failed with its order unknown. A leg that was never sent
// is left to its pass, which reads the position at the send (a flat one
// gets no exit). A leg_cancelled event on the entry's trace names the
// close.
var markClosedExitLegsSQL = markExitLegsSQL(`'the close ' || $2::text || ' left the position this exit protected gone while the exit '
                                        || 'may have been sent: it is not sent again, and cancelled at the venue if it is found there'`)

// restingClosedExitsSQL lists the exit orders that closedExitLegsSQL's
// legs placed ($1..$5 as there, without its outcome filter) and that are
// recorded open, leaving out $6 (the exits the close's own look at the
// venue cancelled: recorded open until their follow job records the
// cancel): their send ended, maybe after the close's own look.
var restingClosedExitsSQL = `SELECT l.client_order_id FROM order_legs l
JOIN orders o ON o.client_order_id = l.parent_client_order_id
JOIN orders x ON x.client_order_id = l.client_order_id
WHERE x.status = 'open' AND l.exchange = $1 AND l.mode = $2
  AND o.symbol = $3 AND l.order_spec->>'Side' = $4
  AND l.role IN ` + exitRolesSQL + `
  AND l.created_at < (` + closeCutOffSQL("$7") + `)
  AND l.client_order_id <> ALL($6)
ORDER BY l.created_at, l.client_order_id`

// ClosedExits is what MarkClosedExitLegs found of the exits of a position
// a close left gone.
type ClosedExits struct {
	// Marked are the exit legs whose order was not known (a send on its
	// way, an answer lost), now marked ended by the close: never sent
	// again, and cancelled at the venue by the leg runner if found.
	Marked []Leg
	// Resting are the client order IDs of that position's exit orders
	// recorded open once every send of one has ended (the marking waited
	// for them), but for those the close's own look cancelled: the venue
	// may hold them still, if they arrived after the close looked.
	Resting []string
}

// MarkClosedExitLegs runs, in a transaction of its own once the close
// closeClientOrderID (trace closedBy) is recorded filled and its venue
// said the position is gone, what a cancel signal does for the exits of
// the entries it is for (MarkCancelledExitLegs): it takes the trace lock
// of every exit leg of venue exchangeName and mode on symbol and side
// (the exit's) planned before the close's intent was armed and not
// settled, waiting up to lockWait for a pass that is sending one (its
// send ends and is recorded first), and marks those whose order is still
// not known (cancelled_by: not sent again, cancelled at the venue if
// found). It then lists the exit orders of those entries recorded open,
// but for cancelledFirst (the client order IDs the close's own look
// cancelled): the caller cancels them at the venue, as the close did not
// see them.
//
// Exits planned after the close read the position (closeCutOffSQL;
// besideSized: a close sized before its intent with a position open after
// it) belong to an entry that filled beside the close: they are left.
func MarkClosedExitLegs(ctx context.Context, pool *pgxpool.Pool, lockWait time.Duration, exchangeName, mode, symbol, side, closeClientOrderID, closedBy string, cancelledFirst []string, besideSized bool) (ClosedExits, error) {
	var out ClosedExits
	tx, err := pool.Begin(ctx)
	if err != nil {
		return out, translate(err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	lw, _ := txTimeouts(lockWait, 0)
	if _, err := tx.Exec(ctx, TxTimeoutsSQL, lw, ""); err != nil {
		return out, fmt.Errorf("closed exit legs: %w", translate(err))
	}
	rows, _ := tx.Query(ctx, closedExitLegsSQL, exchangeName, mode, symbol, side, closeClientOrderID, besideSized)
	type candidate struct{ id, lockKey string }
	all, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (candidate, error) {
		var c candidate
		err := row.Scan(&c.id, &c.lockKey)
		return c, err
	})
	if err != nil {
		return out, fmt.Errorf("closed exit legs: %w", translate(err))
	}
	if len(all) > 0 {
		ids, keys := make([]string, 0, len(all)), make([]string, 0, len(all))
		for _, c := range all {
			ids, keys = append(ids, c.id), append(keys, c.lockKey)
		}
		if _, err := tx.Exec(ctx, lockLegTracesSQL, keys); err != nil {
			return out, fmt.Errorf("lock closed exit legs' traces: %w", translate(err))
		}
		rows, _ := tx.Query(ctx, markClosedExitLegsSQL, ids, closedBy)
		if out.Marked, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Leg, error) { return scanLeg(row) }); err != nil {
			return out, fmt.Errorf("mark closed exit legs: %w", translate(err))
		}
	}
	if cancelledFirst == nil {
		cancelledFirst = []string{}
	}
	rows, _ = tx.Query(ctx, restingClosedExitsSQL, exchangeName, mode, symbol, side, closeClientOrderID, cancelledFirst, besideSized)
	if out.Resting, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return out, fmt.Errorf("resting closed exits: %w", translate(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return out, translate(err)
	}
	return out, nil
}
