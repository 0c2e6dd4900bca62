package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// claimParams is a client-keyed live signal's claim on traceID.
func claimParams(traceID string) db.ClaimParams {
	return db.ClaimParams{TraceID: traceID, LockKey: traceID, Fingerprint: "fp-" + traceID, Mode: "live", KeySource: "client",
		Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Signal: []byte(`{"symbol":"BTCUSDT"}`),
		SourceIP: netip.MustParseAddr("52.89.214.238"), TTL: time.Hour, LockWait: time.Second}
}

// claim runs db.Claim and requires it to succeed.
func claim(t *testing.T, pool *pgxpool.Pool, p db.ClaimParams) (*db.ClaimTx, db.ClaimResult) {
	t.Helper()
	tx, res, err := db.Claim(context.Background(), pool, p)
	require.NoError(t, err)
	// A failed assertion ends the test before its own Rollback; without
	// this the pool's close would wait for the connection forever.
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	return tx, res
}

func countRows(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func order(clientOrderID string) exchange.Order {
	return exchange.Order{ClientOrderID: clientOrderID, Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market",
		Quantity: decimal.RequireFromString("0.5")}
}

func TestClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a new trace is claimed, received and settled in one commit", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		tx, res := claim(t, pool, claimParams("k:new"))
		require.True(t, res.Found)
		require.True(t, res.Claimed)
		require.False(t, res.KillSwitch)
		require.Equal(t, db.TraceClaimed, res.Trace.Status)
		require.Zero(t, res.Executions)
		require.Nil(t, res.Pending)

		rec := db.RecordReport("k:new", "paper", "live", order("hx-new-0"), exchange.Report{Status: exchange.StatusFilled, ExchangeOrderID: "42"})
		require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: "k:new", Status: rec.Status, Order: rec.Order,
			Events: []db.Event{{TraceID: "k:new", Event: db.EventDispatched, Detail: rec.Detail}}}))
		var status db.TraceStatus
		var ip string
		require.NoError(t, pool.QueryRow(ctx, `SELECT status, host(source_ip) FROM trace_ids WHERE trace_id = 'k:new'`).Scan(&status, &ip))
		require.Equal(t, db.TraceDispatched, status)
		require.Equal(t, "52.89.214.238", ip, "the sender's address is recorded")
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:new' AND exchange_order_id = '42'`))
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:new' AND event = 'received'`))
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:new' AND event = 'dispatched'`))
	})

	t.Run("a rolled back claim leaves nothing", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		tx, res := claim(t, pool, claimParams("k:gone"))
		require.True(t, res.Claimed)
		tx.Rollback(ctx)
		tx.Rollback(ctx) // safe twice
		require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids`))
		require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_history`))
	})

	t.Run("a repeat finds the settled trace and its order", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		tx, _ := claim(t, pool, claimParams("k:dup"))
		rec := db.RecordReport("k:dup", "paper", "live", order("hx-dup-0"), exchange.Report{Status: exchange.StatusFilled})
		require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: "k:dup", Status: rec.Status, Order: rec.Order}))

		again, res := claim(t, pool, claimParams("k:dup"))
		require.True(t, res.Found)
		require.False(t, res.Claimed)
		require.Equal(t, db.TraceDispatched, res.Trace.Status)
		require.Equal(t, rec.Order.ID, *res.Trace.OrderID)
		require.Equal(t, "hx-dup-0", *res.Trace.ClientOrderID)
		require.NoError(t, again.Duplicate(ctx, db.Event{TraceID: "k:dup", Event: db.EventDuplicate}))
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_ids`))
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE event = 'duplicate'`))
		require.Error(t, again.Duplicate(ctx), "a finished claim cannot commit again")
	})

	t.Run("a window signal inside the window finds the prior execution", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		window := func(id string) db.ClaimParams {
			p := claimParams(id)
			p.LockKey, p.Fingerprint, p.KeySource, p.Window = "w:abc", "fp-w", "window", time.Minute
			return p
		}
		tx, res := claim(t, pool, window("w:abc:1"))
		require.True(t, res.Claimed)
		require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: "w:abc:1", Status: db.TraceDispatched}))

		tx, res = claim(t, pool, window("w:abc:2"))
		require.False(t, res.Claimed)
		require.Equal(t, "w:abc:1", res.Trace.TraceID, "the repeat is answered with the first execution")
		tx.Rollback(ctx)

		// Once the first is older than the window, the signal executes again.
		_, err := pool.Exec(ctx, `UPDATE trace_ids SET received_at = received_at - interval '61 seconds'`)
		require.NoError(t, err)
		tx, res = claim(t, pool, window("w:abc:3"))
		require.True(t, res.Claimed)
		require.Equal(t, "w:abc:3", res.Trace.TraceID)
		tx.Rollback(ctx)
	})

	t.Run("the kill switch claims nothing", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		_, err := db.SetKillSwitch(ctx, pool, true, "drill", "test")
		require.NoError(t, err)
		tx, res := claim(t, pool, claimParams("k:halted"))
		require.True(t, res.KillSwitch)
		require.False(t, res.Claimed)
		tx.Rollback(ctx)
		require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids`))
	})

	t.Run("the execution number only grows; only a provably unsent last ID is used again", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		// A late not_placed below the top does not lower the number.
		for i, outcome := range []db.IntentOutcome{db.IntentDispatched, db.IntentNotPlaced, db.IntentRejected, db.IntentFailed, db.IntentUnsent} {
			testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:again", Order: order("hx-again-" + string(rune('0'+i))),
				SentAt: time.Now().Add(-time.Hour), Outcome: outcome})
		}
		tx, res := claim(t, pool, claimParams("k:again"))
		defer tx.Rollback(ctx)
		require.True(t, res.Claimed)
		require.Equal(t, 4, res.Executions, "the last execution was provably never sent: it is used again")
		require.Equal(t, "hx-again-4", res.ReuseID)
		require.Nil(t, res.Pending)
		tx.Rollback(ctx)

		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:next", Order: order("hx-next-0"),
			SentAt: time.Now().Add(-time.Hour), Outcome: db.IntentDispatched})
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:next", Order: order("hx-next-1"),
			SentAt: time.Now().Add(-time.Hour), Outcome: db.IntentNotPlaced})
		tx2, res := claim(t, pool, claimParams("k:next"))
		defer tx2.Rollback(ctx)
		require.Equal(t, 2, res.Executions, "a not_placed ID is not handed out again")
		require.Empty(t, res.ReuseID)
	})

	t.Run("an open intent is handed to the next attempt", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		sent := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:died", Fingerprint: "fp-k:died", Order: order("hx-died-0"), SentAt: sent})
		tx, res := claim(t, pool, claimParams("k:died"))
		require.True(t, res.Claimed)
		require.NotNil(t, res.Pending)
		require.Equal(t, "hx-died-0", res.Pending.ClientOrderID)
		require.Equal(t, "fp-k:died", res.Pending.Fingerprint)
		// A minute ago by Postgres's clock, which stamped it.
		require.GreaterOrEqual(t, res.Pending.SentAgo, time.Minute)
		require.Less(t, res.Pending.SentAgo, time.Minute+30*time.Second)
		tx.Rollback(ctx)
	})

	// The claim reads a lock key's intents after its own statement (only
	// when the lock key has any), in a newer snapshot; the trace it has
	// just inserted must not make its own failed intent look recorded.
	t.Run("a failed intent is unknown unless another trace of the key records it", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:lost", Order: order("hx-lost-0"),
			SentAt: time.Now().Add(-time.Hour), Outcome: db.IntentFailed})
		tx, res := claim(t, pool, claimParams("k:lost"))
		require.True(t, res.Claimed)
		require.Len(t, res.Unknown, 1, "its trace was released: the order is unknown")
		require.Equal(t, "hx-lost-0", res.Unknown[0].ClientOrderID)
		require.Equal(t, "BTCUSDT", res.Unknown[0].Order.Symbol)
		require.Equal(t, 1, res.Executions)
		tx.Rollback(ctx)

		// The same failed intent under a lock key that several trace IDs
		// share (as a window key's do), whose trace still exists: recorded,
		// not unknown.
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:held", LockKey: "k:shared", Order: order("hx-shared-0"),
			SentAt: time.Now().Add(-time.Hour), Outcome: db.IntentFailed})
		held, _ := claim(t, pool, claimParams("k:held"))
		require.NoError(t, held.Record(ctx, db.Settlement{TraceID: "k:held", Status: db.TraceFailed}))
		p := claimParams("k:new-under-shared")
		p.LockKey = "k:shared"
		tx, res = claim(t, pool, p)
		require.True(t, res.Claimed)
		require.Empty(t, res.Unknown, "its trace k:held records what happened")
		require.Equal(t, 1, res.Executions)
		tx.Rollback(ctx)
	})

	t.Run("a repeat waits at most LockWait for the first attempt", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		// Two connections open before the clock starts: LockWait also
		// bounds the wait for a connection, and dialling a new one on a
		// busy machine can take longer than the 50 ms of lock wait.
		c1, err := pool.Acquire(ctx)
		require.NoError(t, err)
		c2, err := pool.Acquire(ctx)
		require.NoError(t, err)
		c1.Release()
		c2.Release()
		first, _ := claim(t, pool, claimParams("k:busy"))
		defer first.Rollback(ctx)
		p := claimParams("k:busy")
		p.LockWait = 50 * time.Millisecond
		// ErrBusy (no connection in time: a 503 a sender retries) is
		// retried like a sender would; the lock wait must then time out.
		for range 20 {
			_, _, err = db.Claim(ctx, pool, p)
			if !errors.Is(err, db.ErrBusy) {
				break
			}
		}
		require.ErrorIs(t, err, db.ErrLockTimeout)
	})

	t.Run("a claim waits at most LockWait for a connection, and then claims nothing", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
		// Every connection of the pool held by claims still dispatching.
		var held []*db.ClaimTx
		for i := range pool.Config().MaxConns {
			tx, _ := claim(t, pool, claimParams(fmt.Sprintf("k:holding-%d", i)))
			held = append(held, tx)
		}
		p := claimParams("k:one-too-many")
		p.LockWait = 50 * time.Millisecond
		// The sender's own patience: without the bound the claim would
		// wait for all of it.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _, err := db.Claim(sctx, pool, p)
		require.ErrorIs(t, err, db.ErrBusy)
		require.ErrorIs(t, err, db.ErrUnavailable, "a busy pool reads as the database not taking the signal")
		for _, tx := range held {
			tx.Rollback(ctx)
		}
		require.Zero(t, countRows(t, pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:one-too-many'`))
		tx, res := claim(t, pool, claimParams("k:one-too-many"))
		require.True(t, res.Claimed, "once a connection is free the resend claims it")
		tx.Rollback(ctx)
	})
}

func TestWriteIntent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	intent := func(clientOrderID string) *db.Intent {
		return &db.Intent{ClientOrderID: clientOrderID, LockKey: "k:i", TraceID: "k:i", Fingerprint: "fp", Mode: "live",
			KeySource: "client", Exchange: "paper", Order: order(clientOrderID), Signal: []byte(`{}`), ReceivedAt: time.Now()}
	}
	outcome := func(t *testing.T, pool *pgxpool.Pool, id string) *db.IntentOutcome {
		t.Helper()
		var o *db.IntentOutcome
		require.NoError(t, pool.QueryRow(ctx, `SELECT outcome FROM dispatch_intents WHERE client_order_id = $1`, id).Scan(&o))
		return o
	}

	t.Run("a new intent is written with its dispatch_started event", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		in := intent("hx-i-0")
		require.NoError(t, db.WriteIntent(ctx, pool, in, true))
		require.Equal(t, 1, in.Attempts)
		require.False(t, in.SentAt.IsZero())
		require.Nil(t, outcome(t, pool, "hx-i-0"))
		got, err := db.GetIntent(ctx, pool, "hx-i-0")
		require.NoError(t, err)
		require.Equal(t, "0.5", got.Order.Quantity.String())
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE event = 'dispatch_started'`))
	})

	for _, prior := range []db.IntentOutcome{"", db.IntentUnsent, db.IntentNotPlaced} {
		t.Run(fmt.Sprintf("re-arms an intent with outcome %q", prior), func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:i", Order: order("hx-i-0"),
				SentAt: time.Now().Add(-time.Hour), Outcome: prior})
			in := intent("hx-i-0")
			in.Armed = 1 // as the claim read it
			require.NoError(t, db.WriteIntent(ctx, pool, in, false))
			require.Equal(t, 2, in.Attempts)
			require.WithinDuration(t, time.Now(), in.SentAt, time.Minute, "the accept window restarts from this send")
			require.Nil(t, outcome(t, pool, "hx-i-0"), "open again")
		})
	}

	t.Run("refuses an intent armed since the claim read it", func(t *testing.T) {
		// Two attempts whose claims read the same state (the first one's
		// claim connection, and the trace's lock with it, was lost): only
		// one of them may send under the ID.
		t.Parallel()
		pool := pgtest.NewPool(t)
		first := intent("hx-i-0")
		require.NoError(t, db.WriteIntent(ctx, pool, first, true))
		late := intent("hx-i-0") // read the ID as new, too
		err := db.WriteIntent(ctx, pool, late, true)
		require.True(t, errors.Is(err, db.ErrIntentConsumed), "%v", err)
		stale := intent("hx-i-0")
		stale.Armed = 2 // read a re-arm that never happened
		err = db.WriteIntent(ctx, pool, stale, true)
		require.True(t, errors.Is(err, db.ErrIntentConsumed), "%v", err)
		got, err := db.GetIntent(ctx, pool, "hx-i-0")
		require.NoError(t, err)
		require.Equal(t, 1, got.Attempts, "armed once")
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE event = 'dispatch_started'`))
	})

	t.Run("a re-armed intent is the arming signal's", func(t *testing.T) {
		// An unsent ID sent again for another signal under the same key.
		t.Parallel()
		pool := pgtest.NewPool(t)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:i", Order: order("hx-i-0"), Outcome: db.IntentUnsent})
		in := intent("hx-i-0")
		in.Armed, in.Fingerprint, in.Exchange, in.Mode = 1, "fp-other", "binance", "test"
		in.Order.Action = "sell"
		require.NoError(t, db.WriteIntent(ctx, pool, in, true))
		var fingerprint, exchange, mode, action string
		require.NoError(t, pool.QueryRow(ctx, `SELECT fingerprint, exchange, mode, action FROM dispatch_intents
			WHERE client_order_id = 'hx-i-0'`).Scan(&fingerprint, &exchange, &mode, &action))
		require.Equal(t, []string{"fp-other", "binance", "test", "sell"}, []string{fingerprint, exchange, mode, action})
	})

	t.Run("refuses an intent settled with an order", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:i", Order: order("hx-i-0"), Outcome: db.IntentDispatched})
		err := db.WriteIntent(ctx, pool, intent("hx-i-0"), true)
		require.True(t, errors.Is(err, db.ErrIntentConsumed), "%v", err)
		require.Equal(t, db.IntentDispatched, *outcome(t, pool, "hx-i-0"), "the settled intent is untouched")
	})
}

func TestSettleIntent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:s", Order: order("hx-s-0")})
	require.NoError(t, db.SettleIntent(ctx, pool, "hx-s-0", db.IntentUnsent,
		db.Event{TraceID: "k:s", Event: db.EventDispatchAborted, Detail: map[string]any{"outcome": "unsent"}}))
	var o db.IntentOutcome
	var settled bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT outcome, settled_at IS NOT NULL FROM dispatch_intents WHERE client_order_id = 'hx-s-0'`).Scan(&o, &settled))
	require.Equal(t, db.IntentUnsent, o)
	require.True(t, settled)
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:s' AND event = 'dispatch_aborted'`))
}

// An attempt closes the intent it armed only while it is still its own:
// an attempt whose claim lost its connection (and the trace's lock) must
// not overwrite what the attempt that claimed next recorded.
func TestSettleAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ev := db.Event{TraceID: "k:a", Event: db.EventDispatchAborted, Detail: map[string]any{"outcome": "unsent"}}
	state := func(t *testing.T, pool *pgxpool.Pool) (outcome *string, events int) {
		t.Helper()
		require.NoError(t, pool.QueryRow(ctx, `SELECT outcome FROM dispatch_intents WHERE client_order_id = 'hx-a-0'`).Scan(&outcome))
		return outcome, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:a' AND event = 'dispatch_aborted'`)
	}

	t.Run("closes the attempt's own open intent", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:a", Order: order("hx-a-0"), ArmID: 7})
		settled, err := db.SettleAttempt(ctx, pool, "hx-a-0", 1, 7, db.IntentUnsent, ev)
		require.NoError(t, err)
		require.True(t, settled)
		outcome, events := state(t, pool)
		require.Equal(t, "unsent", *outcome)
		require.Equal(t, 1, events)
	})

	// Another attempt's arming, open: armed again since (attempts 2), or
	// armed in this one's stead (one whose claim's lock was lost and one
	// that claimed next read the intent armed the same number of times;
	// the other committed its arming and sent the order, this one's write
	// failed with its outcome unknown, and it settles the arming it would
	// have made).
	for name, rearm := range map[string]string{
		"leaves an intent armed again by another attempt":     `UPDATE dispatch_intents SET attempts = 2, arm_id = 8`,
		"leaves an intent another attempt armed in its stead": `UPDATE dispatch_intents SET arm_id = 8`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:a", Order: order("hx-a-0"), ArmID: 7})
			_, err := pool.Exec(ctx, rearm)
			require.NoError(t, err)
			settled, err := db.SettleAttempt(ctx, pool, "hx-a-0", 1, 7, db.IntentUnsent, ev)
			require.NoError(t, err)
			require.False(t, settled)
			outcome, events := state(t, pool)
			require.Nil(t, outcome, "still the other attempt's, open")
			require.Zero(t, events, "no event for an outcome not written")
		})
	}

	t.Run("leaves an intent another attempt settled", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.NewPool(t)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:a", Order: order("hx-a-0"), Outcome: db.IntentDispatched, ArmID: 7})
		settled, err := db.SettleAttempt(ctx, pool, "hx-a-0", 1, 7, db.IntentUnsent, ev)
		require.NoError(t, err)
		require.False(t, settled)
		outcome, events := state(t, pool)
		require.Equal(t, "dispatched", *outcome)
		require.Zero(t, events)
	})
}

// The hot statements bind domain-typed values as text ($n::text), so that
// Postgres does not rebuild the domain's check for every bound value; the
// domain still refuses a value outside it, and nothing is written.
func TestDomainsRefuseValuesBoundAsText(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	checkViolation := func(t *testing.T, err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%v", err)
		require.Equal(t, "23514", pgErr.Code, "a check violation: %v", err)
	}

	checkViolation(t, db.WriteIntent(ctx, pool, &db.Intent{ClientOrderID: "hx-d-0", LockKey: "k:d", TraceID: "k:d",
		Fingerprint: "fp", Mode: "bogus", KeySource: "client", Exchange: "paper", Order: order("hx-d-0"),
		Signal: []byte(`{}`), ReceivedAt: time.Now()}, true))
	require.Equal(t, 0, countRows(t, pool, `SELECT count(*) FROM dispatch_intents`))
	require.Equal(t, 0, countRows(t, pool, `SELECT count(*) FROM trace_history`))

	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:d", Order: order("hx-d-1")})
	checkViolation(t, db.SettleIntent(ctx, pool, "hx-d-1", "bogus"))
	require.Equal(t, 0, countRows(t, pool, `SELECT count(*) FROM dispatch_intents WHERE outcome IS NOT NULL`))

	// The order's amounts (migration 00028): a settlement whose order has
	// no positive quantity or price, or a leverage outside 1–125, is
	// refused whole; a market order's missing price passes.
	lev := func(n int32) *int32 { return &n }
	for i, bad := range []func(o *db.OrderRow){
		func(o *db.OrderRow) { o.Quantity = decimal.Zero },
		func(o *db.OrderRow) { o.Price = decimal.NewNullDecimal(decimal.RequireFromString("-1")) },
		func(o *db.OrderRow) { o.Leverage = lev(126) },
		func(o *db.OrderRow) { o.Leverage = lev(0) },
	} {
		id := fmt.Sprintf("k:amount-%d", i)
		tx, _ := claim(t, pool, claimParams(id))
		rec := db.RecordReport(id, "paper", "live", order(fmt.Sprintf("hx-amount-%d", i)),
			exchange.Report{Status: exchange.StatusFilled, ExchangeOrderID: "42"})
		bad(rec.Order)
		checkViolation(t, tx.Record(ctx, db.Settlement{TraceID: id, Status: rec.Status, Order: rec.Order}))
	}
	require.Equal(t, 0, countRows(t, pool, `SELECT count(*) FROM orders`))
	require.Equal(t, 0, countRows(t, pool, `SELECT count(*) FROM trace_ids`), "the claims rolled back with their orders")
	tx, _ := claim(t, pool, claimParams("k:amount-ok"))
	rec := db.RecordReport("k:amount-ok", "paper", "live", order("hx-amount-ok"),
		exchange.Report{Status: exchange.StatusFilled, ExchangeOrderID: "42"})
	rec.Order.Leverage = lev(125)
	require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: "k:amount-ok", Status: rec.Status, Order: rec.Order}))
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM orders WHERE quantity = 0.5 AND price IS NULL AND leverage = 125`))
}

// An attempt that hangs or dies without rolling back (a panic that escapes
// every recover, a stuck venue call) leaves its claim idle in transaction,
// holding the trace's lock: every repeat would be in_progress until a
// restart. Postgres ends such a session after the claim's IdleTimeout, and
// the next claim of the trace wins it.
func TestClaimLeftIdleIsEndedByPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	p := claimParams("k:hung")
	p.IdleTimeout = 2 * time.Second
	hung, res := claim(t, pool, p)
	require.True(t, res.Claimed)
	t.Cleanup(func() { hung.Rollback(ctx) }) // returns the dead connection, so the pool can close

	// The claim holds the trace's advisory lock from an idle transaction,
	// and a repeat cannot get past it.
	var pid int32
	require.NoError(t, pool.QueryRow(ctx, `
SELECT a.pid FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
WHERE a.datname = current_database() AND a.state = 'idle in transaction' AND l.locktype = 'advisory' AND l.granted`).Scan(&pid))
	repeat := claimParams("k:hung")
	repeat.LockWait = 50 * time.Millisecond
	_, _, err := db.Claim(ctx, pool, repeat)
	require.ErrorIs(t, err, db.ErrLockTimeout, "while the hung claim lives, a repeat waits on its lock")

	// Nobody finishes the claim: Postgres ends its session, and the lock
	// goes with it.
	require.Eventually(t, func() bool {
		return countRows(t, pool, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 0 &&
			countRows(t, pool, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'`) == 0
	}, 30*time.Second, 50*time.Millisecond, "Postgres never ended the idle claim's session")

	next, res := claim(t, pool, claimParams("k:hung"))
	require.True(t, res.Claimed, "the hung claim rolled back: the next attempt owns the trace")
	require.NoError(t, next.Record(ctx, db.Settlement{TraceID: "k:hung", Status: db.TraceDispatched}))
	require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:hung' AND event = 'received'`),
		"only the winning claim's received event committed")

	err = hung.Record(ctx, db.Settlement{TraceID: "k:hung", Status: db.TraceDispatched})
	require.ErrorIs(t, err, db.ErrUnavailable, "the hung attempt, coming back late, can no longer commit")
}

// The sweeper lists stranded intents, then takes each one's lock in turn;
// meanwhile a resend may have sent the order again (re-arming the intent)
// and died. Recover must decide on the send as it stands under the lock, or
// a lagging lookup's "not found" would count against the old send's accept
// window and close an intent whose order may still arrive.
func TestRecoverDecidesOnTheSendUnderTheLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: "k:r", Order: order("hx-r-0"), SentAt: time.Now().Add(-time.Hour)})
	items, err := db.ListStranded(ctx, pool, time.Minute, time.Hour, 10)
	require.NoError(t, err)
	require.Len(t, items, 1)
	listed := items[0].Intent.SentAt

	var resent time.Time
	require.NoError(t, pool.QueryRow(ctx,
		`UPDATE dispatch_intents SET sent_at = now(), attempts = attempts + 1 WHERE client_order_id = 'hx-r-0' RETURNING sent_at`).Scan(&resent))
	var decided time.Time
	done, err := db.Recover(ctx, pool, items[0], time.Second, time.Hour, func(_ context.Context, s db.Stranded) (db.Recovery, error) {
		decided = s.Intent.SentAt
		return db.Recovery{}, nil
	})
	require.NoError(t, err)
	require.True(t, done)
	require.True(t, decided.Equal(resent), "decided on the send at %v, not the resend at %v (listed %v)", decided, resent, listed)
}

// The claim looks up a lock key's unsettled intents through the lock key's
// own rows, never by walking every unsettled intent in sent_at order: with
// thousands of them (crash leftovers before the sweeper's pass) that walk
// made each claim cost as much as they were many (migrations 00005, 00010).
func TestClaimPendingLookupUsesTheLockKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	seedIntents(t, pool, nil) // unsettled, under other lock keys
	p := claimParams("k:new")
	for _, analyzed := range []bool{false, true} {
		if analyzed {
			_, err := pool.Exec(ctx, "ANALYZE dispatch_intents")
			require.NoError(t, err)
		}
		plan := explain(t, pool, db.ClaimSQL, p.TraceID, p.Fingerprint, p.Mode, p.KeySource, p.Exchange, p.Symbol, p.Action,
			p.Signal, p.SourceIP, nil, int64(3600000), []byte(`{}`), nil, p.LockKey)
		require.NotContains(t, fmt.Sprint(plan), "dispatch_intents_open_idx", "analyzed %v, plan:\n%s", analyzed, plan)
		require.NotContains(t, fmt.Sprint(plan), "dispatch_intents_unknown_idx", "analyzed %v, plan:\n%s", analyzed, plan)
		require.Contains(t, fmt.Sprint(plan), "dispatch_intents_lock_key_execution_idx", "analyzed %v, plan:\n%s", analyzed, plan)
	}
}

// The sweeper's scan of open intents and a spot close's unrecorded sells
// read one partial index of the open intents (migration 00026), however many
// settled intents there are and whatever the statistics say.
func TestOpenIntentScansUseTheOpenIndex(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	dispatched := "dispatched"
	seedIntents(t, pool, &dispatched)
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{db.StrandedIntentsSQL, []any{int64(60000), 100}},
		{db.LeftOpenIntentsSQL, []any{int64(60000), 100}},
		{`SELECT count(*) FROM dispatch_intents i WHERE i.exchange = $1 AND i.mode = $2 AND (i.outcome IS NULL OR i.outcome = 'reconciling')`,
			[]any{"binance", "live"}},
	} {
		plan := explain(t, pool, q.sql, q.args...)
		require.Contains(t, fmt.Sprint(plan), "dispatch_intents_open_idx", "plan:\n%s", plan)
	}
}

// explain returns the lines of EXPLAIN sql.
func explain(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "EXPLAIN "+sql, args...)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return plan
}

// seedIntents writes 20,000 intents under lock keys of their own, with
// outcome (nil: unsettled), and no ANALYZE: the plans tested must not
// depend on statistics.
func seedIntents(t *testing.T, pool *pgxpool.Pool, outcome *string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol, action,
                              order_spec, signal, received_at, sent_at, execution, outcome, settled_at)
SELECT 'hx' || g, 'k:other-' || g, 'k:other-' || g, 'fp', 'live', 'client', 'paper', 'BTCUSDT', 'buy', '{}', '{}',
       now() - interval '1 hour', now() - interval '1 hour' + g * interval '1 millisecond', 0,
       $1::text, CASE WHEN $1::text IS NOT NULL THEN now() END
FROM generate_series(1, 20000) g`, outcome)
	require.NoError(t, err)
}

// A settlement with its order and its intent (RecordOrderSQL) records the
// order, settles the trace and the intent, and appends its events in their
// order, whatever their number, none included.
// FingerprintDetail writes what json.Marshal writes for the map it stands
// for, so the audit queries read a repeat's detail as before.
func TestFingerprintDetailIsTheMapsJSON(t *testing.T) {
	t.Parallel()
	for _, fp := range []string{"", "0123456789abcdef", strings.Repeat("ab", 32), `a"b`, "<\\u2028>", "ABC"} {
		want, err := json.Marshal(map[string]any{"fingerprint": fp})
		require.NoError(t, err)
		require.Equal(t, string(want), db.FingerprintDetail(fp), "fingerprint %q", fp)
	}
}

func TestRecordOrderSettlesWithAnyNumberOfEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, n := range []int{0, 1, 3, 9} {
		id := fmt.Sprintf("k:events-%d", n)
		coid := fmt.Sprintf("hx-events-%d", n)
		testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: id, Order: order(coid)})
		tx, res := claim(t, pool, claimParams(id))
		require.True(t, res.Claimed)
		rec := db.RecordReport(id, "paper", "live", order(coid), exchange.Report{Status: exchange.StatusFilled, ExchangeOrderID: "42"})
		var events []db.Event
		for i := range n {
			e := db.Event{TraceID: id, Event: fmt.Sprintf("step_%d", i)}
			switch {
			case i%2 == 0:
				e.SourceIP, e.Detail = netip.MustParseAddr("10.0.0.1"), map[string]any{"i": i}
			case i%4 == 1:
				e.DetailJSON = fmt.Sprintf(`{"j": %d}`, i)
			}
			events = append(events, e)
		}
		require.NoError(t, tx.Record(ctx, db.Settlement{TraceID: id, Status: rec.Status, Order: rec.Order,
			IntentID: coid, IntentOutcome: db.IntentDispatched, Events: events}))

		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM orders o JOIN trace_ids t USING (trace_id)
			WHERE o.trace_id = $1 AND t.status = 'dispatched' AND t.order_id = o.id`, id))
		require.Equal(t, 1, countRows(t, pool, `SELECT count(*) FROM dispatch_intents
			WHERE client_order_id = $1 AND outcome = 'dispatched' AND settled_at IS NOT NULL`, coid))
		rows, err := pool.Query(ctx, `SELECT event || ':' || coalesce(host(source_ip), '-') || ':' || detail::text
			FROM trace_history WHERE trace_id = $1 AND event LIKE 'step_%' ORDER BY id`, id)
		require.NoError(t, err)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		want := []string{}
		for i := range n {
			switch {
			case i%2 == 0:
				want = append(want, fmt.Sprintf(`step_%d:10.0.0.1:{"i": %d}`, i, i))
			case i%4 == 1:
				want = append(want, fmt.Sprintf(`step_%d:-:{"j": %d}`, i, i))
			default:
				want = append(want, fmt.Sprintf("step_%d:-:{}", i))
			}
		}
		require.Equal(t, want, got, "%d events", n)
	}
}

// An orphaned reconcile of a named account's window trace is settled under
// the lock every claim of the same signal takes (LockKeyOf: the account
// prefix kept, the window's time dropped), not under one of its own: the
// sweeper's settlement must serialise with the signal's claims and
// reconciles.
func TestOrphanedWindowReconcileOfANamedAccountTakesTheSignalsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, id := range []string{"@acct:w:abc:1733300000000", "test:@acct:w:abc:1733300000000", "w:abc:1733300000000", "k:plain"} {
		old := time.Now().Add(-time.Hour)
		testfactory.Trace(t, pool, testfactory.TraceOpts{ID: id, Status: db.TraceReconciling, KeySource: "window",
			ReceivedAt: old, UpdatedAt: old})
	}
	items, err := db.ListStranded(ctx, pool, time.Minute, time.Hour, 10)
	require.NoError(t, err)
	got := map[string]string{}
	for _, it := range items {
		got[it.TraceID] = it.Intent.LockKey
	}
	require.Equal(t, map[string]string{
		"@acct:w:abc:1733300000000":      "@acct:w:abc",
		"test:@acct:w:abc:1733300000000": "test:@acct:w:abc",
		"w:abc:1733300000000":            "w:abc",
		"k:plain":                        "k:plain",
	}, got)
	for id, key := range got {
		require.Equal(t, db.LockKeyOf(id), key)
	}
}
