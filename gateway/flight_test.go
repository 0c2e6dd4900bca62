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
	"github.com/hoox/hoox/testcontainers"
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
	outs := make([]*gateway.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		in := input(t, body)
		wg.Go(func() { outs[i], errs[i] = b.svc.Execute(context.Background(), in) })
	}
	return func() []stormResult {
		t.Helper()
		wg.Wait()
		results := make([]stormResult, n)
		for i, err := range errs {
			if err == nil {
				results[i] = stormResult{status: outs[i].Status}
				if outs[i].Order != nil {
					results[i].orderID = outs[i].Order.ID.String()
				}
				continue
			}
			ge := requireCode(t, err, codes.Duplicate)
			results[i] = stormResult{code: ge.Code, status: ge.Original.Status}
			if ge.Original.OrderID != nil {
				results[i].orderID = ge.Original.OrderID.String()
			}
		}
		return results
	}
}

// Copies of one signal arriving while the first is at the venue wait for it
// in memory, not on a database connection: with a claim pool of two
// connections and fifty copies queued, another signal is still placed at
// once, and every copy is then told the first one's outcome.
func TestCopiesOfASignalInFlightWaitWithoutAConnection(t *testing.T) {
	t.Parallel()
	url := testcontainers.NewDatabase(t)
	venue := &memVenue{gated: "BTCUSDT", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := setupMemWith(t, url, venue, memOpts{maxConns: 2})
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

	close(venue.gate)
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
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event = 'duplicate'"),
		"every copy's repeat is audited")
}

// When the first copy does not leave a settled trace (here the venue's
// answer is lost and the trace is reconciling), the waiting copies ask the
// database like any repeat, and still place nothing.
func TestCopiesOfAnUnsettledSignalAskTheDatabase(t *testing.T) {
	t.Parallel()
	url := testcontainers.NewDatabase(t)
	venue := &memVenue{gated: "BTCUSDT", gate: make(chan struct{}), entered: make(chan struct{}, 1), loseNext: true}
	b := setupMemWith(t, url, venue, memOpts{maxConns: 4})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"lost"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 20
	copies := runCopies(t, b, body, n)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == n }, 10*time.Second, time.Millisecond)
	close(venue.gate)
	require.Equal(t, db.TraceReconciling, first()[0].status)
	for i, r := range copies() {
		require.Equal(t, stormResult{code: codes.Duplicate, status: db.TraceReconciling}, r, "copy %d", i)
	}
	require.Equal(t, 1, venue.count())
	require.Equal(t, 1, b.jobs.count(), "one reconcile job")
	b.svc.Close()
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event = 'duplicate'"))
}

// A signal with neither key nor timestamp gets a trace ID per arrival; its
// copies inside the dedup window are still the same signal, and are
// answered from the first one's outcome.
func TestWindowCopiesInFlightAreAnsweredFromTheFirst(t *testing.T) {
	t.Parallel()
	url := testcontainers.NewDatabase(t)
	venue := &memVenue{gated: "BTCUSDT", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := setupMemWith(t, url, venue, memOpts{maxConns: 2})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 30
	acquiredBefore := b.pool.Stat().AcquireCount()
	copies := runCopies(t, b, body, n)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == n }, 10*time.Second, time.Millisecond)
	close(venue.gate)
	placed := first()[0]
	require.Empty(t, placed.code)
	for i, r := range copies() {
		require.Equal(t, stormResult{code: codes.Duplicate, orderID: placed.orderID, status: db.TraceDispatched}, r, "copy %d", i)
	}
	require.Equal(t, 1, venue.count())
	b.svc.Close()
	require.Less(t, b.pool.Stat().AcquireCount()-acquiredBefore, int64(n/2), "the copies were answered without the database")
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event = 'duplicate'"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids"), "no copy became a trace of its own")
}

// The dedup window is measured from a copy's arrival, not from when it
// reached the database: a copy that arrived inside the window, then waited
// for a first attempt running past the window's end, is still a repeat.
// (Here the first attempt's answer is lost, so the copy asks the database.)
func TestWindowIsMeasuredFromArrival(t *testing.T) {
	t.Parallel()
	url := testcontainers.NewDatabase(t)
	const window = 100 * time.Millisecond
	venue := &memVenue{gated: "BTCUSDT", gate: make(chan struct{}), entered: make(chan struct{}, 1), loseNext: true}
	b := setupMemWith(t, url, venue, memOpts{window: window})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	copies := runCopies(t, b, body, 1)
	require.Eventually(t, func() bool { return b.svc.CopiesWaiting() == 1 }, 10*time.Second, time.Millisecond)
	// The scenario is time passing: the first attempt outlives the window.
	time.Sleep(2 * window)
	close(venue.gate)
	require.Equal(t, db.TraceReconciling, first()[0].status)
	require.Equal(t, stormResult{code: codes.Duplicate, status: db.TraceReconciling}, copies()[0])
	require.Equal(t, 1, venue.count(), "the copy placed no second order")
}

// Close refuses new signals at once but waits for the ones in flight to be
// recorded: a shutdown never strands an order the venue already holds.
func TestCloseWaitsForSignalsInFlight(t *testing.T) {
	t.Parallel()
	url := testcontainers.NewDatabase(t)
	venue := &memVenue{gated: "BTCUSDT", gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	b := setupMemWith(t, url, venue, memOpts{})
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
	close(venue.gate)
	require.Equal(t, db.TraceDispatched, first()[0].status)
	<-closed
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:closing'"))
}
