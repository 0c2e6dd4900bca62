package jobs_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/jobs"
)

// lostLockOKX is the real OKX adapter on okxfake (a clOrdId is unique only
// among pending orders, so a filled order's ID is taken again), with hooks
// after each lookup and placement so a test can interleave two actors, and
// an accept window of 1 ms so the test need not wait 17 s.
type lostLockOKX struct {
	*okx.Venue
	lookups, places atomic.Int32
	afterLookup     func(n int32)
	afterPlace      func(n int32)
}

func (v *lostLockOKX) AcceptWindow() time.Duration { return time.Millisecond }

func (v *lostLockOKX) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	r, err := v.Venue.Lookup(ctx, o)
	if n := v.lookups.Add(1); v.afterLookup != nil {
		v.afterLookup(n)
	}
	return r, err
}

func (v *lostLockOKX) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	r, err := v.Venue.Place(ctx, o)
	if n := v.places.Add(1); v.afterPlace != nil {
		v.afterPlace(n)
	}
	return r, err
}

var lostLockOrder = exchange.Order{ClientOrderID: "hxlostlk0000000000000000000000a1", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
	OrderType: "market", Quantity: decimal.RequireFromString("0.01")}

func lostLockVenue(t *testing.T) (*lostLockOKX, *okxfake.Server) {
	t.Helper()
	fake := okxfake.New(t, okxfake.Options{})
	ov, err := okx.New(okx.Config{APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(), BaseURL: fake.URL,
		ConfirmWait: 200 * time.Millisecond})
	require.NoError(t, err)
	return &lostLockOKX{Venue: ov}, fake
}

// lostLockSeed leaves traceID reconciling on okx with its intent sent
// a second ago (past the 1 ms window), as the gateway leaves a lost answer.
func lostLockSeed(t *testing.T, pool *pgxpool.Pool, traceID string) jobs.ReconcileArgs {
	t.Helper()
	sent := time.Now().Add(-time.Second)
	o := lostLockOrder
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: traceID, Status: db.TraceReconciling, Exchange: "okx", Symbol: o.Symbol,
		Action: o.Action, ClientOrderID: o.ClientOrderID, ReceivedAt: sent, UpdatedAt: sent})
	testfactory.Intent(t, pool, testfactory.IntentOpts{TraceID: traceID, Order: o, SentAt: sent, Exchange: "okx",
		Outcome: db.IntentReconciling})
	return jobs.ReconcileArgs{TraceID: traceID, Exchange: "okx", Mode: "live", Order: o, ReceivedAt: sent}
}

// lostLockTerminateLockHolder ends the Postgres session holding an advisory lock
// in this test's database (the reconcile's own transaction): the lock goes
// with it while the worker goes on, as with lock_lost in the torture.
func lostLockTerminateLockHolder(ctx context.Context, pool *pgxpool.Pool) error {
	var n int
	err := pool.QueryRow(ctx, `
SELECT count(pg_terminate_backend(pid)) FROM pg_locks
WHERE locktype = 'advisory' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	if err == nil && n != 1 {
		err = fmt.Errorf("terminated %d lock holders, want 1", n)
	}
	return err
}

func lostLockJob(args jobs.ReconcileArgs) *river.Job[jobs.ReconcileArgs] {
	return &river.Job[jobs.ReconcileArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: jobs.ReconcileMaxAttempts}, Args: args}
}

func lostLockWait(t *testing.T, ch <-chan struct{}, what string) bool {
	select {
	case <-ch:
		return true
	case <-time.After(20 * time.Second):
		t.Errorf("timed out waiting for %s", what)
		return false
	}
}

// Two runs of one reconcile (the first one's lock session lost after its
// lookup, the second a rescue or any re-run that then takes the lock): only
// the run whose re-arm finds the intent as it read it under the lock sends.
// TouchIntent used to re-arm a `reconciling` intent whatever its attempts,
// so both sent the client order ID; OKX frees a clOrdId once its order
// filled, so the second send was a second order, never recorded. In
// production the second run needs the first to outlive River's stuck-job
// rescue while its session is gone (a stalled process); the test plays
// that interleaving directly.
func TestReconcileLostLockTwoRunsPlaceOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	venue, fake := lostLockVenue(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"okx": venue})
	args := lostLockSeed(t, b.pool, "k:lostlock-two-runs")
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))

	secondPlaced, firstDone := make(chan struct{}), make(chan struct{})
	secondErr := make(chan error, 1)
	venue.afterLookup = func(n int32) {
		if n != 1 {
			return
		}
		// The first run has its "not found"; its session (and lock) goes,
		// and a second run of the job takes the lock and re-places.
		if err := lostLockTerminateLockHolder(ctx, b.pool); err != nil {
			t.Errorf("terminate: %v", err)
			return
		}
		go func() { secondErr <- w.Work(ctx, lostLockJob(args)) }()
		lostLockWait(t, secondPlaced, "the second run's placement")
	}
	venue.afterPlace = func(n int32) {
		if n != 1 {
			return
		}
		// The second run placed; it commits only after the first run
		// is done (or sent its own order).
		close(secondPlaced)
		lostLockWait(t, firstDone, "the first run")
	}

	firstErr := w.Work(ctx, lostLockJob(args))
	close(firstDone)
	t.Logf("first run: %v", firstErr)
	select {
	case err := <-secondErr:
		t.Logf("second run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("second run never ended")
	}

	var booked []okxfake.Order
	for _, o := range fake.Orders() {
		if o.ClOrdID == lostLockOrder.ClientOrderID {
			booked = append(booked, o)
		}
	}
	require.Len(t, booked, 1, "OKX holds %d orders for one signal", len(booked))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, lostLockOrder.ClientOrderID))
}

// The sweeper takes a reconcile for dead (its job no longer live) and
// settles it "not placed" after a lookup under the lock; the reconcile,
// whose lock session was lost after its own lookup, goes on but must not
// send: TouchIntent re-arms only an intent still `reconciling`. It used to
// re-arm the intent the sweeper had just closed `not_placed`, and the
// order was placed while the trace said "not placed": an order OKX holds
// and hoox never records. In production the sweeper takes a reconcile for
// dead once its job has been `running` past reconcileDeadAfter; here the
// job row is simply absent, as for a worker stalled that long.
func TestReconcileLostLockSweptIsNeverPlacedAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	venue, fake := lostLockVenue(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"okx": venue})
	args := lostLockSeed(t, b.pool, "k:lostlock-swept")
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	sw := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, jobs.NewMetrics(nil))

	venue.afterLookup = func(n int32) {
		if n != 1 {
			return
		}
		if err := lostLockTerminateLockHolder(ctx, b.pool); err != nil {
			t.Errorf("terminate: %v", err)
			return
		}
		settled, err := sw.Sweep(ctx)
		if err != nil || settled != 1 {
			t.Errorf("sweep: settled %d, %v", settled, err)
		}
	}

	err := w.Work(ctx, lostLockJob(args))
	t.Logf("reconcile: %v", err)

	var booked int
	for _, o := range fake.Orders() {
		if o.ClOrdID == lostLockOrder.ClientOrderID {
			booked++
		}
	}
	recorded := count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, lostLockOrder.ClientOrderID)
	var outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(outcome, '') FROM dispatch_intents WHERE client_order_id = $1`,
		lostLockOrder.ClientOrderID).Scan(&outcome))
	t.Logf("trace %s, intent %s, okx orders %d, recorded %d", traceStatus(t, b.pool, args.TraceID), outcome, booked, recorded)
	require.EqualValues(t, booked, recorded, "every order OKX holds is recorded (the trace says %s)", traceStatus(t, b.pool, args.TraceID))
}
