package jobs_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/testcontainers"
)

// windowed is the paper venue with a real venue's accept window: a request
// may still be accepted (and lookups lag it) for window after it was sent.
type windowed struct {
	*paper.Venue
	window time.Duration
}

func (w windowed) AcceptWindow() time.Duration { return w.window }

var reconcileOrder = exchange.Order{ClientOrderID: "hxrecovery00000000000000000000a", Symbol: "ETHUSDT", Action: "sell", Side: "sell",
	OrderType: "market", Quantity: decimal.RequireFromString("2")}

func TestReconcileWaitsOutTheAcceptWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": windowed{b.paper, time.Hour}})
	args := seedReconciling(t, b.pool, "k:lag", reconcileOrder, time.Now())

	res, err := newTestWorker(t, b).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "not found inside the window proves nothing: wait")
	require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, "k:lag"))
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Empty(t, fills, "nothing placed while the lost request may still be accepted")
}

func TestReconcileNeverPlacesUnderTheKillSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := db.SetKillSwitch(ctx, b.pool, true, "drill", "test")
	require.NoError(t, err)
	args := seedReconciling(t, b.pool, "k:halted", reconcileOrder, time.Now())

	_, err = newTestWorker(t, b).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:halted"))
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Empty(t, fills, "the kill switch halts a reconcile's placement too")
	es := events(t, b.pool, "k:halted")
	require.Contains(t, es[len(es)-1].Detail["reason"], "kill switch")
}

func TestReconcileRefusesAnotherOrderUnderTheID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	other := reconcileOrder
	other.Quantity = decimal.RequireFromString("7")
	_, err := b.paper.Place(ctx, other)
	require.NoError(t, err)
	args := seedReconciling(t, b.pool, "k:mismatch", reconcileOrder, time.Now())

	_, err = newTestWorker(t, b).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:mismatch"))
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM orders"), "another signal's order is never adopted")
	es := events(t, b.pool, "k:mismatch")
	require.Contains(t, es[len(es)-1].Detail["reason"], "different order")
}

// crashingGateway is a gateway whose first attempt "dies" between the
// venue's answer and the commit, as a kill -9 would leave it.
func crashingGateway(t *testing.T, b *testBundle, client *river.Client[pgx.Tx]) *gateway.Service {
	t.Helper()
	crashed := false
	deps := gateway.Deps{Pool: b.pool, MarkerPool: testcontainers.OpenPool(t, b.url), Venues: b.venues,
		AfterVenue: func(string) {
			if !crashed {
				crashed = true
				panic("crash")
			}
		}}
	if client != nil {
		deps.Jobs = client
	}
	gw := gateway.New(gateway.DefaultConfig(), deps)
	t.Cleanup(gw.Close)
	return gw
}

// sweeper is a sweep worker (SweepGrace 1ms) whose log and metrics a test
// reads.
type sweeper struct {
	*jobs.SweepWorker
	logs    *logBuffer
	metrics *jobs.Metrics
}

func newSweeper(t *testing.T, b *testBundle) sweeper {
	t.Helper()
	logger, logs := jsonLogs()
	metrics := jobs.NewMetrics(nil)
	return sweeper{jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, logger, metrics), logs, metrics}
}

// lostRequest is a venue whose placements time out before it took them:
// the gateway cannot tell, and reconciles an order that does not exist.
type lostRequest struct{ *paper.Venue }

func (lostRequest) Place(context.Context, exchange.Order) (exchange.Report, error) {
	return exchange.Report{}, fmt.Errorf("read timeout: %w", exchange.ErrUnknownOutcome)
}

// Nobody resends after a crash (TradingView does not retry a reset
// connection): the sweeper, run by River's leader, records the order the
// dead attempt placed and creates its trace, so a later resend is a
// duplicate and the venue still holds one order.
func TestSweeperRecordsADeadAttemptsOrderWithoutAResend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	gw := crashingGateway(t, b, nil)
	in := input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.25"}`) // window mode
	require.Panics(t, func() { _, _ = gw.Execute(ctx, in) })
	require.False(t, traceExists(t, b.pool, in.Trace.ID))

	startClient(t, b, jobs.Config{SweepInterval: time.Second, SweepGrace: time.Millisecond})
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = $1 AND status = 'dispatched'", in.Trace.ID) == 1
	}, time.Minute, 20*time.Millisecond, "the sweeper never recorded the dead attempt's order")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = $1", in.Trace.ID))
	require.Contains(t, eventNames(events(t, b.pool, in.Trace.ID)), "swept")

	_, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.25"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Duplicate, ge.Code, "inside the window, the resend is a duplicate of the swept trace")
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, fills, 1)
}

// A dead attempt that never reached the venue leaves an open intent and no
// order: the sweeper closes it as not placed and creates no trace, so the
// signal can still be sent.
func TestSweeperClosesAnIntentWhoseOrderNeverArrived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.paper.SetFaults(paper.Faults{Unreachable: true})
	gw := crashingGateway(t, b, nil)
	body := `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"never-sent"}`
	require.Panics(t, func() { _, _ = gw.Execute(ctx, input(t, body)) })
	b.paper.SetFaults(paper.Faults{})

	sw := newSweeper(t, b)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.False(t, traceExists(t, b.pool, "k:never-sent"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome = 'not_placed'"))
	require.Equal(t, 1.0, counterOf(t, sw.metrics.Sweeps, "not_placed"), "nobody was told anything: routine, not failed")
	require.Zero(t, counterOf(t, sw.metrics.Sweeps, "failed"))
	requireLogged(t, sw.logs, slog.LevelInfo, "swept", map[string]any{"outcome": "not_placed", "orphaned_reconcile": false})

	out, err := gw.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
}

// A reconcile whose job is cancelled (in River's UI) or discarded would
// leave its trace reconciling forever, blocking the key. The sweeper settles
// it from what the venue holds.
func TestSweeperSettlesAReconcileWhoseJobWasCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: testcontainers.OpenPool(t, b.url), Venues: b.venues, Jobs: client})
	t.Cleanup(gw.Close)
	b.paper.SetFaults(paper.Faults{LoseAnswer: true})
	out, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"orphan"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	b.paper.SetFaults(paper.Faults{})

	var jobID int64
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE kind = 'reconcile'").Scan(&jobID))
	_, err = client.JobCancel(ctx, jobID)
	require.NoError(t, err)

	sw := newSweeper(t, b)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:orphan"), "the venue's order is adopted")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:orphan'"))
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, fills, 1)
	es := events(t, b.pool, "k:orphan")
	require.Equal(t, "swept", es[len(es)-1].Event)
	require.Equal(t, 1.0, counterOf(t, sw.metrics.Sweeps, "adopted"))
	require.Zero(t, counterOf(t, sw.metrics.Sweeps, "failed"))
	requireLogged(t, sw.logs, slog.LevelInfo, "swept", map[string]any{"trace_id": "k:orphan", "outcome": "adopted", "orphaned_reconcile": true})
}

// A replica killed with -9 while it worked a reconcile leaves the job
// `running` until River's rescuer, an hour later, retries it (found by
// hoox torture). The sweeper takes a reconcile running past its timeout for
// dead and settles the trace from what the venue holds; one still within
// its timeout is left to its worker.
func TestSweeperSettlesAReconcileWhoseWorkerDied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: testcontainers.OpenPool(t, b.url), Venues: b.venues, Jobs: client})
	t.Cleanup(gw.Close)
	b.paper.SetFaults(paper.Faults{LoseAnswer: true})
	out, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"killed-worker"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	b.paper.SetFaults(paper.Faults{})

	// What a worker leaves behind when its process dies mid-job: the job
	// running, attempted by a client that no longer exists.
	running := func(ago time.Duration) {
		_, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_by = '{killed}',
			attempted_at = now() - $1::bigint * interval '1 millisecond' WHERE kind = 'reconcile'`, ago.Milliseconds())
		require.NoError(t, err)
	}
	sw := newSweeper(t, b)
	running(5 * time.Second)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "a reconcile within its timeout is its worker's")
	require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, "k:killed-worker"))

	running(10 * time.Minute)
	n, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:killed-worker"), "the venue's order is adopted without waiting for River's rescue")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:killed-worker'"))
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, fills, 1, "the sweeper adopts, never places")
}

// A cancelled reconcile whose order never reached the venue (the request
// timed out before the venue took it) ends failed: its sender was told
// "reconciling", so an operator must see it end — a reason on the trace,
// the failed series of hoox_sweeps_total, an error in the log — and the
// sweeper still places nothing.
func TestSweeperFailsACancelledReconcileWhoseOrderNeverArrived(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": lostRequest{b.paper}})
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: testcontainers.OpenPool(t, b.url), Venues: b.venues, Jobs: client})
	t.Cleanup(gw.Close)
	out, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"orphan-lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	var jobID int64
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT id FROM river_job WHERE kind = 'reconcile'").Scan(&jobID))
	_, err = client.JobCancel(ctx, jobID)
	require.NoError(t, err)

	sw := newSweeper(t, b)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:orphan-lost"))
	es := events(t, b.pool, "k:orphan-lost")
	require.Equal(t, "failed", es[len(es)-1].Event)
	require.Contains(t, es[len(es)-1].Detail["reason"], "reconcile job ended")
	require.Contains(t, es[len(es)-1].Detail["reason"], "holds no order")
	require.Equal(t, 1.0, counterOf(t, sw.metrics.Sweeps, "failed"), "an orphaned reconcile that ends failed counts as failed")
	require.Zero(t, counterOf(t, sw.metrics.Sweeps, "not_placed"))
	requireLogged(t, sw.logs, slog.LevelError, "swept", map[string]any{"trace_id": "k:orphan-lost", "outcome": "failed", "orphaned_reconcile": true})
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Empty(t, fills, "the sweeper never places")
}

// A reconciling trace with no job at all (its last attempt was discarded)
// and no order at the venue ends failed, with a reason an operator can act
// on, instead of blocking its key forever.
func TestSweeperFailsAnOrphanedReconcileWithNoOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	seedReconciling(t, b.pool, "k:orphan-none", reconcileOrder, time.Now().Add(-time.Minute))

	sw := newSweeper(t, b)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:orphan-none"))
	es := events(t, b.pool, "k:orphan-none")
	require.Equal(t, "failed", es[len(es)-1].Event)
	require.Contains(t, es[len(es)-1].Detail["reason"], "reconcile job ended")
	require.Equal(t, 1.0, counterOf(t, sw.metrics.Sweeps, "failed"))
	require.Zero(t, counterOf(t, sw.metrics.Sweeps, "not_placed"))
	requireLogged(t, sw.logs, slog.LevelError, "swept", map[string]any{"trace_id": "k:orphan-none", "outcome": "failed", "orphaned_reconcile": true})
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Empty(t, fills, "the sweeper never places")
}
