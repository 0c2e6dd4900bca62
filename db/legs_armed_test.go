package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A leg is armed only as the pass read it under the trace's lock: a pass
// whose lock was lost while another armed the leg is refused before it
// sends, and its late "never reached the venue" does not clear the other
// pass's send. A cancel settles only legs no pass has armed, and a pass
// cannot arm a leg the cancel settled.
func TestLegIsArmedOnlyAsThePassReadIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	o := order("hx-armed-0")
	tp := order("hx-armed-tp")
	tp.Side, tp.ReduceOnly, tp.Exit = "sell", true, exchange.RoleTakeProfit
	o.Legs = []exchange.Leg{{Role: exchange.RoleTakeProfit, Order: tp}}
	in := &db.Intent{ClientOrderID: o.ClientOrderID, LockKey: "k:armed", TraceID: "k:armed", Fingerprint: "fp", Mode: "live",
		KeySource: "client", Exchange: "paper", Order: o, Signal: []byte(`{}`), ReceivedAt: time.Now()}
	require.NoError(t, db.WriteIntent(ctx, pool, in, true))
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, filled_quantity) VALUES ($1, 'k:armed', $2, 'paper', 'BTCUSDT', 'buy', 'buy', 'market', 0.5, 'live', 'filled', 0.5)`,
		uuid.New(), o.ClientOrderID)
	require.NoError(t, err)
	leg := db.Leg{ClientOrderID: tp.ClientOrderID, ParentClientOrderID: o.ClientOrderID, Seq: 1, Role: exchange.RoleTakeProfit,
		TraceID: "k:armed", LockKey: "k:armed", Exchange: "paper", Mode: "live", Order: tp}
	started := func() int {
		return apptest.Count(t, pool, `SELECT count(*) FROM trace_events WHERE trace_id = 'k:armed' AND event = 'leg_started'`)
	}
	sent := func() int {
		return apptest.Count(t, pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND sent_at IS NOT NULL`, leg.ClientOrderID)
	}
	btc := func(p db.ExitParent) bool { return exchange.SameSymbol(p.Symbol, "BINANCE:BTCUSDT.P") }

	// Pass B armed the leg (0 → 1); pass A read it at 0 before its lock
	// was lost.
	require.NoError(t, db.MarkLegSent(ctx, pool, leg, 1))
	require.ErrorIs(t, db.MarkLegSent(ctx, pool, leg, 1), db.ErrIntentConsumed, "pass A must not send what pass B armed")
	require.Equal(t, 1, started(), "only the send that armed the leg is in the audit")

	// A cancel leaves an armed leg to its pass.
	dropped, err := db.DropUnsentExitLegs(ctx, pool, "paper", "live", btc, "k:cancel")
	require.NoError(t, err)
	require.Empty(t, dropped)

	// Pass A's late "unreachable" (it armed 1 in its own view) would
	// clear B's send once B armed it again.
	leg.Attempts = 1
	require.NoError(t, db.MarkLegSent(ctx, pool, leg, 2))
	require.ErrorIs(t, db.MarkLegUnsent(ctx, pool, leg.ClientOrderID, 1, 1), db.ErrIntentConsumed)
	require.Equal(t, 1, sent(), "B's send stays marked: the next pass looks it up before sending")
	// Pass A read the leg armed once, as B did, and its own arming failed
	// with the outcome unknown: the arming it undoes (armed twice) is B's,
	// under another ID, and B's send stays marked.
	require.ErrorIs(t, db.MarkLegUnsent(ctx, pool, leg.ClientOrderID, 2, 3), db.ErrIntentConsumed)
	require.Equal(t, 1, sent(), "B's send stays marked: A's failed arming was not B's")
	require.NoError(t, db.MarkLegUnsent(ctx, pool, leg.ClientOrderID, 2, 2))
	require.Zero(t, sent())

	// Unsent again: a cancel of the symbol (any spelling) settles it, and
	// no pass arms it after.
	dropped, err = db.DropUnsentExitLegs(ctx, pool, "paper", "live", func(db.ExitParent) bool { return false }, "k:cancel")
	require.NoError(t, err)
	require.Empty(t, dropped, "another symbol's cancel leaves it")
	dropped, err = db.DropUnsentExitLegs(ctx, pool, "paper", "live", btc, "k:cancel")
	require.NoError(t, err)
	require.Len(t, dropped, 1)
	require.Equal(t, leg.ClientOrderID, dropped[0].ClientOrderID)
	require.Equal(t, db.IntentNotPlaced, dropped[0].Outcome)
	reason := apptest.Text(t, pool, `SELECT detail->>'reason' FROM trace_events
WHERE trace_id = 'k:armed' AND event = 'leg_failed' AND detail->>'cancelled_by' = 'k:cancel'`)
	require.True(t, strings.Contains(reason, "k:cancel"), reason)
	leg.Attempts = 2
	require.ErrorIs(t, db.MarkLegSent(ctx, pool, leg, 1), db.ErrIntentConsumed, "a leg the cancel settled is not sent")
}

// A cancel marks the symbol's exit legs that may rest at the venue — armed,
// or failed with their order unknown — under their traces' locks: it waits
// for a pass that holds one (ErrLockTimeout past its lock_timeout), marks
// each once, and a marked leg is never armed again nor opened again.
func TestCancelMarksExitLegsThatMayHaveBeenSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	o := order("hx-marked-0")
	tp := order("hx-marked-tp")
	tp.Side, tp.ReduceOnly, tp.Exit = "sell", true, exchange.RoleTakeProfit
	sl := order("hx-marked-sl")
	sl.Side, sl.ReduceOnly, sl.Exit = "sell", true, exchange.RoleStopLoss
	o.Legs = []exchange.Leg{{Role: exchange.RoleTakeProfit, Order: tp}, {Role: exchange.RoleStopLoss, Order: sl}}
	in := &db.Intent{ClientOrderID: o.ClientOrderID, LockKey: "k:marked", TraceID: "k:marked", Fingerprint: "fp", Mode: "live",
		KeySource: "client", Exchange: "paper", Order: o, Signal: []byte(`{}`), ReceivedAt: time.Now()}
	require.NoError(t, db.WriteIntent(ctx, pool, in, true))
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, filled_quantity) VALUES ($1, 'k:marked', $2, 'paper', 'BTCUSDT', 'buy', 'buy', 'market', 0.5, 'live', 'filled', 0.5)`,
		uuid.New(), o.ClientOrderID)
	require.NoError(t, err)
	leg := db.Leg{ClientOrderID: tp.ClientOrderID, ParentClientOrderID: o.ClientOrderID, Seq: 1, Role: exchange.RoleTakeProfit,
		TraceID: "k:marked", LockKey: "k:marked", Exchange: "paper", Mode: "live", Order: tp}
	btc := func(p db.ExitParent) bool { return exchange.SameSymbol(p.Symbol, "BINANCE:BTCUSDT.P") }
	require.Equal(t, 2, apptest.Count(t, pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = $1 AND outcome IS NULL`, o.ClientOrderID))
	require.NoError(t, db.MarkLegSent(ctx, pool, leg, 1), "the take-profit is armed; the stop-loss is not sent yet")

	// A pass holds the trace's lock: the cancel waits, then gives up.
	pass, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = pass.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('k:marked', 0))`)
	require.NoError(t, err)
	cancel, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = cancel.Exec(ctx, `SET LOCAL lock_timeout = '200ms'`)
	require.NoError(t, err)
	_, err = db.MarkCancelledExitLegs(ctx, cancel, "paper", "live", btc, "k:cancel")
	require.ErrorIs(t, err, db.ErrLockTimeout)
	require.NoError(t, cancel.Rollback(ctx))
	require.NoError(t, pass.Rollback(ctx))

	marked, err := db.MarkCancelledExitLegs(ctx, pool, "paper", "live", func(db.ExitParent) bool { return false }, "k:cancel")
	require.NoError(t, err)
	require.Empty(t, marked, "another symbol's cancel leaves it")
	marked, err = db.MarkCancelledExitLegs(ctx, pool, "paper", "live", btc, "k:cancel")
	require.NoError(t, err)
	require.Len(t, marked, 1, "the armed take-profit only: the unsent stop-loss is DropUnsentExitLegs's")
	require.Equal(t, tp.ClientOrderID, marked[0].ClientOrderID)
	require.Equal(t, "k:cancel", marked[0].CancelledBy)
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM trace_events
WHERE trace_id = 'k:marked' AND event = 'leg_cancelled' AND detail->>'cancelled_by' = 'k:cancel'`))
	marked, err = db.MarkCancelledExitLegs(ctx, pool, "paper", "live", btc, "k:cancel-2")
	require.NoError(t, err)
	require.Empty(t, marked, "marked once")

	// Proven unsent since: no pass arms it again.
	require.NoError(t, db.MarkLegUnsent(ctx, pool, leg.ClientOrderID, 1, 1))
	leg.Attempts = 1
	require.ErrorIs(t, db.MarkLegSent(ctx, pool, leg, 1), db.ErrIntentConsumed, "a leg a cancel marked is not sent again")

	// Failed with its order unknown: the sweeper does not open it again.
	_, err = pool.Exec(ctx, `UPDATE order_legs SET outcome = 'failed', settled_at = now(), sent_at = now() WHERE client_order_id = $1`, leg.ClientOrderID)
	require.NoError(t, err)
	tx, legs, err := db.LockLegs(ctx, pool, "k:marked", o.ClientOrderID, time.Second, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "k:cancel", legs[0].CancelledBy)
	require.NoError(t, tx.Reopen(ctx, legs[0], db.Event{TraceID: "k:marked", Event: db.EventLegReopened, Detail: map[string]any{}}))
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, leg.ClientOrderID))
}
