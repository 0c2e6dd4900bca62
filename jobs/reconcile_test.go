package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// TestReconcileAdoptsLostAnswer drives the whole flow: the venue fills the
// order and loses the answer, the gateway answers reconciling (202) and
// queues the job, the job adopts the fill, and a resend is a duplicate.
func TestReconcileAdoptsLostAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	b.paper.SetFaults(paper.Faults{LoseAnswer: true})

	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{
		Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: b.venues, Jobs: client,
	})
	t.Cleanup(gw.Close) // repeats' audit writes finish before the pools close
	in := input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.5","trace_id":"lost-1"}`)

	out, err := gw.Execute(ctx, in)
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, in.Trace.ID))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM orders`))

	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(sctx))
	})
	require.Eventually(t, func() bool { return traceStatus(t, b.pool, in.Trace.ID) == db.TraceDispatched },
		time.Minute, 50*time.Millisecond, "the reconcile job never settled the trace")

	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, fills, 1, "the venue must hold exactly one fill")
	var orderStatus, clientOrderID string
	var qty decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT status, client_order_id, quantity FROM orders WHERE trace_id = $1`, in.Trace.ID).
		Scan(&orderStatus, &clientOrderID, &qty))
	require.Equal(t, "filled", orderStatus)
	require.Equal(t, fills[0].ClientOrderID, clientOrderID)
	require.True(t, qty.Equal(decimal.RequireFromString("0.5")))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders`))

	es := events(t, b.pool, in.Trace.ID)
	require.Equal(t, "reconciled", es[len(es)-1].Event)
	require.Equal(t, true, es[len(es)-1].Detail["adopted"])
	require.Contains(t, eventNames(es), "reconciling")

	// The resend is a duplicate of the settled trace; nothing more placed.
	b.paper.SetFaults(paper.Faults{})
	_, err = gw.Execute(ctx, in)
	var gerr *gateway.Error
	require.ErrorAs(t, err, &gerr)
	require.Equal(t, codes.Duplicate, gerr.Code)
	require.Equal(t, db.TraceDispatched, gerr.Original.Status)
	fills, err = b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, fills, 1)
}

func TestReconcileWorker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	order := exchange.Order{ClientOrderID: "hxreconcile0000000000000000000a", Symbol: "ETHUSDT", Action: "sell", Side: "sell",
		OrderType: "market", Quantity: decimal.RequireFromString("2")}

	t.Run("NotFoundYoungPlacesOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		args := seedReconciling(t, b.pool, "k:young", order, time.Now())
		w := newTestWorker(t, b)

		res, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:young"))
		fills, err := b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, fills, 1)
		require.Equal(t, order.ClientOrderID, fills[0].ClientOrderID)
		es := events(t, b.pool, "k:young")
		require.Equal(t, "reconciled", es[len(es)-1].Event)
		require.Equal(t, true, es[len(es)-1].Detail["placed"])

		// A second job for the same trace finds it settled and does nothing.
		_, err = w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.NoError(t, err)
		fills, err = b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, fills, 1)
		require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:young'`))
	})

	t.Run("NotFoundOldFailsWithoutPlacing", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		args := seedReconciling(t, b.pool, "k:old", order, time.Now().Add(-time.Minute))
		w := newTestWorker(t, b)

		res, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:old"))
		fills, err := b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Empty(t, fills, "a stale signal must never be placed")
		require.Zero(t, count(t, b.pool, `SELECT count(*) FROM orders`))
		es := events(t, b.pool, "k:old")
		require.Equal(t, "failed", es[len(es)-1].Event)
		require.Contains(t, es[len(es)-1].Detail["reason"], "not sent")
	})

	t.Run("UnreachableRetriesThenFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.paper.SetFaults(paper.Faults{Unreachable: true})
		args := seedReconciling(t, b.pool, "k:down", order, time.Now())
		logger, logs := testutil.JSONLogs()
		metrics := jobs.NewMetrics(nil)
		w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
			jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, logger, metrics))

		// Not the last attempt: River retries later, the trace waits.
		res, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		require.Equal(t, river.EventKindJobFailed, res.EventKind)
		require.NotContains(t, []rivertype.JobState{rivertype.JobStateDiscarded, rivertype.JobStateCompleted,
			rivertype.JobStateCancelled}, res.Job.State, "the job must stay to be retried")
		require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, "k:down"))
		require.Zero(t, counterOf(t, metrics.Reconciles, "exhausted"), "a retried attempt settles nothing")

		// The last attempt settles the trace as failed for an operator:
		// a reason on the trace, the exhausted series, an error log.
		res, err = w.Work(ctx, t, beginTx(t, b.pool), args, &river.InsertOpts{MaxAttempts: 1})
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:down"))
		es := events(t, b.pool, "k:down")
		require.Equal(t, "failed", es[len(es)-1].Event)
		require.Contains(t, es[len(es)-1].Detail["reason"], "unknown")
		require.Contains(t, es[len(es)-1].Detail["reason"], "check the venue")
		require.Equal(t, 1.0, counterOf(t, metrics.Reconciles, "exhausted"))
		requireLogged(t, logs, slog.LevelError, "reconcile gave up", map[string]any{"trace_id": "k:down", "client_order_id": order.ClientOrderID})
		fills, err := b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Empty(t, fills)
	})

	t.Run("FoundAdopts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.paper.Place(ctx, order)
		require.NoError(t, err)
		// Old, but found: adopting is always safe, whatever the age.
		args := seedReconciling(t, b.pool, "k:found", order, time.Now().Add(-time.Hour))
		w := newTestWorker(t, b)

		_, err = w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.NoError(t, err)
		require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:found"))
		fills, err := b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, fills, 1)
		var exchangeOrderID string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT exchange_order_id FROM orders WHERE trace_id = 'k:found'`).Scan(&exchangeOrderID))
		require.Equal(t, fills[0].ExchangeOrderID, exchangeOrderID)
	})

	t.Run("TraceGoneIsNoError", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		w := newTestWorker(t, b)
		args := jobs.ReconcileArgs{TraceID: "k:released", Exchange: "paper", Mode: "live", Order: order, ReceivedAt: time.Now()}
		res, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		fills, err := b.paper.Orders(ctx)
		require.NoError(t, err)
		require.Empty(t, fills)
	})
}

func input(t *testing.T, body string) gateway.Input {
	t.Helper()
	in, err := gateway.ParseInput([]byte(body), "", time.Now())
	require.NoError(t, err)
	return in
}

func newTestWorker(t *testing.T, b *testBundle) *rivertest.Worker[jobs.ReconcileArgs, pgx.Tx] {
	t.Helper()
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	return rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
}

// beginTx is the transaction rivertest keeps its job row in; the worker
// itself writes through the pool, as in production.
func beginTx(t *testing.T, pool *pgxpool.Pool) pgx.Tx {
	t.Helper()
	tx, err := pool.Begin(context.Background())
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := tx.Rollback(context.Background()); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
			t.Errorf("rollback: %v", err)
		}
	})
	return tx
}

// seedReconciling writes a trace and its intent as the gateway leaves them
// after a lost answer (the order sent at receivedAt), and returns the job's
// arguments.
func seedReconciling(t *testing.T, pool *pgxpool.Pool, traceID string, o exchange.Order, receivedAt time.Time) jobs.ReconcileArgs {
	t.Helper()
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: traceID, Status: db.TraceReconciling, Symbol: o.Symbol,
		Action: o.Action, ClientOrderID: o.ClientOrderID, ReceivedAt: receivedAt, UpdatedAt: time.Now()})
	seedIntent(t, pool, traceID, o, receivedAt, db.IntentReconciling)
	return jobs.ReconcileArgs{TraceID: traceID, Exchange: "paper", Mode: "live", Order: o, ReceivedAt: receivedAt}
}

// seedIntent writes o's intent as sent at sentAt, with outcome ("" for an
// open intent: an attempt that died).
func seedIntent(t *testing.T, pool *pgxpool.Pool, traceID string, o exchange.Order, sentAt time.Time, outcome db.IntentOutcome) {
	t.Helper()
	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: traceID, Order: o, SentAt: sentAt, Outcome: outcome})
}
