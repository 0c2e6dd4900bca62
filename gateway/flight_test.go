package gateway_test

import (
	"context"
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
	b := setupMemPool(t, url, venue, 2, nil)
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"storm"}`

	first := runCopies(t, b, body, 1)
	<-venue.entered
	const n = 50
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
	b := setupMemPool(t, url, venue, 4, nil)
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
