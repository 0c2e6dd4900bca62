package gateway_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/signal"
)

// B5: a repeat of a placed signal is a duplicate whatever the kill switch
// says: the sender must learn that its order exists, not read "nothing was
// placed" and place it elsewhere by hand. Both a lone repeat and copies
// coalesced behind one another get the 409 with the order.
func TestKillSwitchStillAnswersRepeatsWithTheirOrder(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, nil)
	ctx := context.Background()
	for name, body := range map[string]string{
		"ClientKey": `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-k"}`,
		"Window":    `{"exchange":"mem","symbol":"ETHUSDT","action":"buy","quantity":"1"}`,
	} {
		out, err := b.svc.Execute(ctx, input(t, body))
		require.NoError(t, err, name)
		require.Equal(t, db.TraceDispatched, out.Status)
		_, err = db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
		require.NoError(t, err)

		_, err = b.svc.Execute(ctx, input(t, body))
		ge := requireCode(t, err, codes.Duplicate)
		require.Equal(t, out.Order.ID, *ge.Original.OrderID, name)

		_, err = db.SetKillSwitch(ctx, b.pool, false, "test", "admin")
		require.NoError(t, err)
	}
	require.Equal(t, 2, b.venue.count())

	// A new signal is still halted.
	_, err := db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
	require.NoError(t, err)
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-new"}`))
	requireCode(t, err, codes.KillSwitch)
	require.Equal(t, 2, b.venue.count())
}

// B4: the execution number behind a window-mode client order ID only
// grows. Execution 0's answer is lost (the trace reconciles, its intent
// counts as used), execution 1 places under the next ID, and then
// execution 0's intent is settled not_placed (a late reconcile: kill
// switch, stale signal, or the sweeper). Counting "used" intents would now
// give execution 2 the ID execution 1 consumed, and every later copy of
// the signal would be refused 503 for good.
func TestWindowExecutionNumberNeverGoesDown(t *testing.T) {
	t.Parallel()
	const window = 20 * time.Millisecond
	venue := &memVenue{dropNext: true}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window})
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	next := func() gateway.Input {
		// Each execution arrives after the previous one's dedup window.
		time.Sleep(window + 5*time.Millisecond)
		return input(t, body)
	}

	first := input(t, body)
	out, err := b.svc.Execute(ctx, first)
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status, "execution 0's answer was lost")

	out, err = b.svc.Execute(ctx, next())
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "execution 1 places")
	require.Equal(t, 1, venue.count())

	// Execution 0 resolves late: nothing at the venue, not placed.
	var cid string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT client_order_id FROM trace_ids WHERE trace_id = $1", first.Trace.ID).Scan(&cid))
	_, err = db.Reconcile(ctx, b.pool, first.Trace.ID, cid, time.Second, func(context.Context, db.ReconcileState) (db.Resolution, error) {
		return db.Resolution{Status: db.TraceFailed, IntentOutcome: db.IntentNotPlaced,
			Event: db.Event{TraceID: first.Trace.ID, Event: db.EventFailed}}, nil
	})
	require.NoError(t, err)

	for i := 2; i < 4; i++ {
		out, err = b.svc.Execute(ctx, next())
		require.NoError(t, err, "execution %d gets a client order ID nobody used", i)
		require.Equal(t, db.TraceDispatched, out.Status)
	}
	require.Equal(t, 3, venue.count())
	require.Equal(t, 4, count(t, b.pool, "SELECT count(DISTINCT client_order_id) FROM dispatch_intents"))
}

// B2: a replica whose clock is off Postgres's by ±30 s decides exactly as
// one in step. Whether a dead attempt's accept window has passed, and
// whether its intent belongs to this window execution, are judged by
// Postgres's now() against the times Postgres stamped.
func TestReplicaClockSkewChangesNoDecision(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		t.Run("InsideTheAcceptWindow"+skew.String(), func(t *testing.T) {
			t.Parallel()
			// The dead attempt's order is at the venue but lookups lag it;
			// the window (10 s) is still open by Postgres's clock.
			venue := &memVenue{window: 10 * time.Second, lookupLag: time.Hour}
			b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{afterVenue: crashOnce(), skew: skew})
			body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"skew-open"}`
			executeCrashing(t, b.svc, skewedInput(t, body, skew))
			out, err := b.svc.Execute(context.Background(), skewedInput(t, body, skew))
			require.NoError(t, err)
			require.Equal(t, db.TraceReconciling, out.Status, "the window is open: not found proves nothing")
			require.Equal(t, 1, venue.count(), "nothing placed again")
		})
		t.Run("PastTheAcceptWindow"+skew.String(), func(t *testing.T) {
			t.Parallel()
			const window = 100 * time.Millisecond
			venue := &memVenue{window: window, dropNext: true, refusesLate: true}
			b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{afterVenue: crashOnce(), skew: skew})
			body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"skew-closed"}`
			executeCrashing(t, b.svc, skewedInput(t, body, skew))
			require.Zero(t, venue.count())
			time.Sleep(window + 50*time.Millisecond) // the window itself must pass
			out, err := b.svc.Execute(context.Background(), skewedInput(t, body, skew))
			require.NoError(t, err)
			require.Equal(t, db.TraceDispatched, out.Status, "the window has closed: the order is sent again")
			require.Equal(t, 1, venue.count())
		})
		t.Run("WindowModeResendOfTheSameExecution"+skew.String(), func(t *testing.T) {
			t.Parallel()
			// A skew larger than the dedup window: still the same execution.
			skew := skew * 3
			venue := &memVenue{}
			b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{afterVenue: crashOnce(), skew: skew})
			body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
			executeCrashing(t, b.svc, skewedInput(t, body, skew))
			out, err := b.svc.Execute(context.Background(), skewedInput(t, body, skew))
			require.NoError(t, err)
			require.Equal(t, db.TraceDispatched, out.Status, "the resend adopts the dead attempt's order")
			require.Equal(t, 1, venue.count())
		})
	}
}

// skewedInput is a signal arriving at a replica whose clock is off by skew.
func skewedInput(t *testing.T, body string, skew time.Duration) gateway.Input {
	t.Helper()
	in, err := gateway.ParseInput([]byte(body), "", time.Now().Add(skew))
	require.NoError(t, err)
	return in
}

// forceReleasedUnknown leaves body's trace as the reconcile does when it
// gives up (failed, "whether order X exists is unknown") and has an
// operator force its release. It returns the unknown client order ID.
func forceReleasedUnknown(t *testing.T, b *memBundle, body string) string {
	t.Helper()
	ctx := context.Background()
	in := input(t, body)
	out, err := b.svc.Execute(ctx, in)
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	var cid string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT client_order_id FROM trace_ids WHERE trace_id = $1", in.Trace.ID).Scan(&cid))
	_, err = db.Reconcile(ctx, b.pool, in.Trace.ID, cid, time.Second, func(context.Context, db.ReconcileState) (db.Resolution, error) {
		return db.Resolution{Status: db.TraceFailed, IntentOutcome: db.IntentFailed, Event: db.Event{TraceID: in.Trace.ID,
			Event: db.EventFailed, Detail: map[string]any{"reason": "whether order " + cid + " exists is unknown"}}}, nil
	})
	require.NoError(t, err)
	_, err = db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: in.Trace.ID, By: "admin", Force: true, LockWait: time.Second})
	require.NoError(t, err)
	return cid
}

// B3: after an operator forces the release of a trace whose order was
// unknown, the next attempt under the key looks that order up first: it
// adopts it when the venue holds it, places only when the venue proves it
// absent (a venue that refuses late requests), and otherwise places
// nothing.
func TestAttemptAfterAForcedReleaseLooksUpTheUnknownOrderFirst(t *testing.T) {
	t.Parallel()
	const body = `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"forced"}`
	t.Run("HeldIsAdopted", func(t *testing.T) {
		t.Parallel()
		venue := &memVenue{loseNext: true}
		b := setupMem(t, pgtest.NewDatabase(t), venue, nil)
		cid := forceReleasedUnknown(t, b, body)
		require.Equal(t, 1, venue.count())

		out, err := b.svc.Execute(context.Background(), input(t, body))
		require.NoError(t, err)
		require.Equal(t, db.TraceDispatched, out.Status)
		require.Equal(t, cid, out.Order.ClientOrderID, "the unknown order is adopted")
		require.Equal(t, 1, venue.count(), "not placed a second time")
	})
	t.Run("AbsentAtALateRefusingVenueIsPlaced", func(t *testing.T) {
		t.Parallel()
		venue := &memVenue{dropNext: true, refusesLate: true}
		b := setupMem(t, pgtest.NewDatabase(t), venue, nil)
		cid := forceReleasedUnknown(t, b, body)
		require.Zero(t, venue.count())

		out, err := b.svc.Execute(context.Background(), input(t, body))
		require.NoError(t, err)
		require.Equal(t, db.TraceDispatched, out.Status)
		require.NotEqual(t, cid, out.Order.ClientOrderID)
		require.Equal(t, 1, venue.count())
		var outcome db.IntentOutcome
		require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT outcome FROM dispatch_intents WHERE client_order_id = $1", cid).Scan(&outcome))
		require.Equal(t, db.IntentNotPlaced, outcome, "the unknown order is resolved: absent")
	})
	t.Run("AbsentAtAVenueThatMayFillLateIsNotPlaced", func(t *testing.T) {
		t.Parallel()
		venue := &memVenue{dropNext: true}
		b := setupMem(t, pgtest.NewDatabase(t), venue, nil)
		forceReleasedUnknown(t, b, body)

		_, err := b.svc.Execute(context.Background(), input(t, body))
		ge := requireCode(t, err, codes.Unavailable)
		require.Contains(t, ge.Detail, "nothing was placed")
		require.Zero(t, venue.count(), "a late fill of the unknown order could still double it")
	})
}

// B7: after a crash, a resend whose earlier order is not found past the
// accept window sends it again only to a venue that refuses late requests;
// for one that may still fill it (no exchange.LateRefuser), the trace
// reconciles — and the reconcile ends it failed as a missed trade.
func TestResendPastTheWindowIsNotResentToAVenueThatMayFillLate(t *testing.T) {
	t.Parallel()
	venue := &memVenue{dropNext: true}
	b := setupMem(t, pgtest.NewDatabase(t), venue, crashOnce())
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"late-fill"}`
	executeCrashing(t, b.svc, input(t, body))
	out, err := b.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	require.Zero(t, venue.count(), "not sent again")
}

// B7: a market order the venue reports still open (executing) is not
// recorded as final by the request that finds it: the trace reconciles,
// and the reconcile follows it until it has executed.
func TestAdoptedMarketOrderStillOpenReconciles(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, nil)
	in := input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"working"}`)
	b.venue.hold(exchange.Order{ClientOrderID: signal.ClientOrderID("", in.Trace.LockKey, 0), Symbol: "BTCUSDT", Side: "buy",
		OrderType: "market", Quantity: in.Signal.Quantity}, exchange.StatusOpen)

	out, err := b.svc.Execute(context.Background(), in)
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	require.Equal(t, 1, b.venue.count(), "nothing placed")
	require.Equal(t, 1, b.jobs.count(), "a reconcile follows the order")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM orders"))
}

// B10: staging and production trading on one venue account never adopt
// each other's orders: the same signal with the same client key derives a
// different client order ID in each deployment.
func TestDeploymentsOnOneAccountNeverAdoptEachOthersOrders(t *testing.T) {
	t.Parallel()
	venue := &memVenue{} // one account
	staging := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{deployment: "staging-1f0c"})
	production := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{deployment: "production-93ab"})
	// A resting limit order: the venue refuses its client order ID again
	// while it is open, and a refusal leads to a lookup that would adopt.
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","price":"100","trace_id":"same-key"}`

	a, err := staging.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	b, err := production.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	require.Equal(t, 2, venue.count(), "each deployment placed its own order")
	require.NotEqual(t, a.Order.ClientOrderID, b.Order.ClientOrderID)
	require.NotEqual(t, *a.Order.ExchangeOrderID, *b.Order.ExchangeOrderID, "production did not adopt staging's order")
}

// B10: a window-mode signal sent again after its dedup window, while the
// previous execution's dead attempt still has an open intent, gets an
// honest answer at once (TradingView retries for seconds, not a minute):
// the attempt recovers the earlier execution itself under the lock —
// records its order as the sweeper would — and then executes.
func TestNextWindowExecutionRecoversTheDeadEarlierOneItself(t *testing.T) {
	t.Parallel()
	const window = 30 * time.Millisecond
	venue := &memVenue{}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, afterVenue: crashOnce()})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	first := input(t, body)
	executeCrashing(t, b.svc, first)
	require.Equal(t, 1, venue.count())

	time.Sleep(window + 10*time.Millisecond) // the next execution comes after the window
	out, err := b.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "this execution is placed")
	require.Equal(t, 2, venue.count(), "one order per execution")
	require.Equal(t, 2, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, count(t, b.pool, fmt.Sprintf("SELECT count(*) FROM trace_ids WHERE trace_id = '%s' AND status = 'dispatched'", first.Trace.ID)),
		"the earlier execution's order is recorded under its own trace")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))
}

// B10: while the earlier execution's order may still be accepted (its
// accept window is open), the next execution is told 503 with a short
// Retry-After, not for a minute — 503, not 409 in_progress: this execution
// is a new order, and TradingView resends only after a 5xx.
func TestNextWindowExecutionWaitsOnlyForTheEarlierOnesAcceptWindow(t *testing.T) {
	t.Parallel()
	const window = 30 * time.Millisecond
	venue := &memVenue{dropNext: true, window: 2 * time.Second}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, afterVenue: crashOnce()})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	executeCrashing(t, b.svc, input(t, body))

	time.Sleep(window + 10*time.Millisecond)
	_, err := b.svc.Execute(context.Background(), input(t, body))
	ge := requireCode(t, err, codes.Unavailable)
	require.LessOrEqual(t, ge.RetryAfter, 3*time.Second)
	require.Zero(t, venue.count())
}

// B5: copies of a repeat arriving together under the kill switch (queued
// behind one another in a flight, or racing on the claim) all get the
// 409 with the order.
func TestKillSwitchAnswersConcurrentRepeatsWithTheirOrder(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, nil)
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-storm"}`
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	_, err = db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
	require.NoError(t, err)

	const copies = 20
	errs := make(chan error, copies)
	start := make(chan struct{})
	for range copies {
		go func() {
			<-start
			_, err := b.svc.Execute(ctx, input(t, body))
			errs <- err
		}()
	}
	close(start)
	for range copies {
		ge := requireCode(t, <-errs, codes.Duplicate)
		require.Equal(t, out.Order.ID, *ge.Original.OrderID)
	}
	require.Equal(t, 1, b.venue.count())
}
