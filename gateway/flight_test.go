package gateway_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/timing"
)

// stormResult is what one copy of a signal got.
type stormResult struct {
	code    string // "" for a placement
	orderID string
	status  db.TraceStatus
}

// runCopies executes n copies of body at once; the function it returns
// waits for them and tells what each got.
func runCopies(t *testing.T, b *memBundle, body string, n int) func() []stormResult {
	t.Helper()
	ins := make([]gateway.Input, n)
	for i := range ins {
		ins[i] = input(t, body)
	}
	return runInputs(t, b, ins)
}

// runInputs is runCopies for inputs made by the caller.
func runInputs(t *testing.T, b *memBundle, ins []gateway.Input) func() []stormResult {
	t.Helper()
	outs := make([]*gateway.Outcome, len(ins))
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Go(func() { outs[i], errs[i] = b.svc.Execute(context.Background(), in) })
	}
	return func() []stormResult {
		t.Helper()
		wg.Wait()
		results := make([]stormResult, len(ins))
		for i, err := range errs {
			if err == nil {
				results[i] = stormResult{status: outs[i].Status}
				if outs[i].Order != nil {
					results[i].orderID = outs[i].Order.ID.String()
				}
				continue
			}
			var ge *gateway.Error
			require.ErrorAs(t, err, &ge)
			results[i] = stormResult{code: ge.Code}
			if o := ge.Original; o != nil {
				results[i].status = o.Status
				if o.OrderID != nil {
					results[i].orderID = o.OrderID.String()
				}
			}
		}
		return results
	}
}

// flightOpts are the gateway settings of these tests: the longest lock
// wait there is, so a loaded machine's slowness is not read as a copy
// waiting too long.
func flightOpts(o memOpts) memOpts {
	o.lockWait = timing.MaxLockWait
	return o
}

// Copies of one signal arriving while the first is at the venue wait for it
// in memory, not on a database connection: with a claim pool of two
// connections and fifty copies queued, another signal is still placed at
// once, and every copy is then told the first one's outcome.
func TestCopiesOfASignalInFlightWaitWithoutAConnection(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	venue := gatedVenue("BTCUSDT")
	b := setupMemWith(t, url, venue, flightOpts(memOpts{maxConns: 2}))
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"storm"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 50
	acquiredBefore := b.pool.Stat().AcquireCount()
	copies := runCopies(t, b, body, n)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == n }, 10*time.Second, time.Millisecond)

	other, err := b.svc.Execute(context.Background(),
		input(t, `{"exchange":"mem","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":"bystander"}`))
	require.NoError(t, err, "a signal of its own still gets a claim connection")
	require.Equal(t, db.TraceDispatched, other.Status)

	venue.open()
	placed := first()[0]
	require.Empty(t, placed.code)
	for i, r := range copies() {
		require.Equal(t, stormResult{code: codes.Duplicate, orderID: placed.orderID, status: db.TraceDispatched}, r, "copy %d", i)
	}
	require.Equal(t, 2, venue.count(), "the storm placed one order, the bystander one")
	b.svc.Close()
	// The bystander's claim and the batched audit rows (a few batches,
	// however the copies' wake-ups spread): not one claim per copy.
	require.Less(t, b.pool.Stat().AcquireCount()-acquiredBefore, int64(n/2), "the copies were answered without the database")
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'duplicate'"),
		"every copy's repeat is audited")
}

// When the first copy does not leave a settled trace (here the venue's
// answer is lost and the trace is reconciling), the waiting copies ask the
// database like any repeat, and still place nothing.
func TestCopiesOfAnUnsettledSignalAskTheDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	venue := gatedVenue("BTCUSDT")
	venue.loseNext = true
	b := setupMemWith(t, url, venue, flightOpts(memOpts{maxConns: 4}))
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"lost"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 20
	copies := runCopies(t, b, body, n)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == n }, 10*time.Second, time.Millisecond)
	venue.open()
	require.Equal(t, db.TraceReconciling, first()[0].status)
	duplicates := 0
	for i, r := range copies() {
		// Each copy waits its turn for the reconciling trace's lock: on a
		// slow machine the last may run out of time (409 in_progress).
		if r.code == codes.InProgress {
			continue
		}
		require.Equal(t, stormResult{code: codes.Duplicate, status: db.TraceReconciling}, r, "copy %d", i)
		duplicates++
	}
	require.Positive(t, duplicates)
	require.Equal(t, 1, venue.count(), "every copy placed nothing")
	require.Equal(t, 1, b.jobs.count(), "one reconcile job")
	b.svc.Close()
	require.Equal(t, duplicates, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'duplicate'"))
}

// A signal with neither key nor timestamp gets a trace ID per arrival; its
// copies inside the dedup window are still the same signal, and are
// answered from the first one's outcome.
func TestWindowCopiesInFlightAreAnsweredFromTheFirst(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	venue := gatedVenue("BTCUSDT")
	b := setupMemWith(t, url, venue, flightOpts(memOpts{maxConns: 2}))
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 30
	acquiredBefore := b.pool.Stat().AcquireCount()
	copies := runCopies(t, b, body, n)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == n }, 10*time.Second, time.Millisecond)
	venue.open()
	placed := first()[0]
	require.Empty(t, placed.code)
	for i, r := range copies() {
		require.Equal(t, stormResult{code: codes.Duplicate, orderID: placed.orderID, status: db.TraceDispatched}, r, "copy %d", i)
	}
	require.Equal(t, 1, venue.count())
	b.svc.Close()
	require.Less(t, b.pool.Stat().AcquireCount()-acquiredBefore, int64(n/2), "the copies were answered without the database")
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'duplicate'"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids"), "no copy became a trace of its own")
}

// The dedup window is measured from a copy's arrival, not from when it
// reached the database: a copy that arrived inside the window, then waited
// for a first attempt running past the window's end, is still a repeat.
// (Here the first attempt's answer is lost, so the copy asks the database.)
func TestWindowIsMeasuredFromArrival(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	const window = 100 * time.Millisecond
	venue := gatedVenue("BTCUSDT")
	venue.loseNext = true
	b := setupMemWith(t, url, venue, flightOpts(memOpts{window: window}))
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	leader := input(t, body)
	first := runInputs(t, b, []gateway.Input{leader})
	<-venue.entered
	copyIn := input(t, body)
	copyIn.Arrived = leader.Arrived.Add(time.Millisecond) // inside the window by construction
	copies := runInputs(t, b, []gateway.Input{copyIn})
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == 1 }, 10*time.Second, time.Millisecond)
	// The scenario is time passing: the first attempt outlives the window.
	time.Sleep(2 * window)
	venue.open()
	require.Equal(t, db.TraceReconciling, first()[0].status)
	require.Equal(t, stormResult{code: codes.Duplicate, status: db.TraceReconciling}, copies()[0])
	require.Equal(t, 1, venue.count(), "the copy placed no second order")
}

// Close refuses new signals at once but waits for the ones in flight to be
// recorded: a shutdown never strands an order the venue already holds.
func TestCloseWaitsForSignalsInFlight(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	venue := gatedVenue("BTCUSDT")
	b := setupMemWith(t, url, venue, flightOpts(memOpts{}))
	first := runCopies(t, b, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"closing"}`, 1)
	<-venue.entered

	closed := make(chan struct{})
	go func() { b.svc.Close(); close(closed) }()
	probe := input(t, `{"exchange":"nowhere","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"late"}`)
	require.Eventually(t, func() bool {
		_, err := b.svc.Execute(context.Background(), probe)
		var ge *gateway.Error
		return errors.As(err, &ge) && ge.Code == codes.Unavailable
	}, 10*time.Second, time.Millisecond, "a signal after Close is refused")
	select {
	case <-closed:
		t.Fatal("Close returned while a signal was at the venue")
	default:
	}
	venue.open()
	require.Equal(t, db.TraceDispatched, first()[0].status)
	<-closed
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:closing'"))
}
