package gateway_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/timing"
)

// A resend that arrives after an operator released its trace executes again
// (DESIGN: a release lets the same signal be sent again; settled.go: "a
// trace released … since is not found there, and the signal claims like
// any other"). A copy that finds the first attempt still in flight on this
// replica — its primary recorded, its legs (the parts of a split close)
// still being placed — must not be answered from that attempt's outcome
// when the trace was released after the outcome committed and before the
// copy arrived: nothing of the resend is placed, and the sender, told 409
// duplicate, does not send again.
func TestCopyArrivingAfterAReleaseIsNotAnsweredFromTheFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, marker := pgtest.OpenPool(t, url), pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	bigETH(fake)
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("250.5"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue})
	var legs atomic.Int32
	reached := []chan struct{}{make(chan struct{}), make(chan struct{})}
	proceed := []chan struct{}{make(chan struct{}), make(chan struct{})}
	cfg := gateway.DefaultConfig()
	cfg.Timing.LockWait = timing.MaxLockWait
	svc := gateway.New(cfg, gateway.Deps{Pool: pool, MarkerPool: marker, Venues: reg,
		AfterLeg: func(string) {
			if i := legs.Add(1) - 1; i < 2 {
				close(reached[i])
				<-proceed[i]
			}
		}})
	t.Cleanup(svc.Close)
	t.Cleanup(func() {
		for _, c := range proceed {
			select {
			case <-c:
			default:
				close(c)
			}
		}
	})
	body := `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"rel-split"}`

	type result struct {
		out *gateway.Outcome
		err error
	}
	first := make(chan result, 1)
	go func() { out, err := svc.Execute(ctx, input(t, body)); first <- result{out, err} }()
	<-reached[0] // the primary is recorded; the first part is at the venue

	// The operator releases the trace (the release waits for the part's
	// pass, which holds the trace's lock).
	released := make(chan error, 1)
	go func() {
		_, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:rel-split", By: "admin", LockWait: 10 * time.Second})
		released <- err
	}()
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`) == 1
	}, 5*time.Second, time.Millisecond)
	close(proceed[0])
	require.NoError(t, <-released, "released between the two parts")
	<-reached[1] // the attempt is still in flight: its second part
	require.Equal(t, 0, count(t, pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:rel-split'`))

	// A new position, and the strategy sends the released signal again.
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("40"))
	resend := make(chan result, 1)
	go func() { out, err := svc.Execute(ctx, input(t, body)); resend <- result{out, err} }()
	// Today it queues behind the first attempt (a fixed gateway may send
	// it to the database instead, where it waits for the part's lock).
	for deadline := time.Now().Add(time.Second); svc.CopiesWaiting() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	t.Logf("copies waiting in flight: %d", svc.CopiesWaiting())
	close(proceed[1])
	r := <-first
	require.NoError(t, r.err)
	r = <-resend
	require.NoError(t, r.err, "the resend of a released key executes (a claim would have)")
	require.Equal(t, "40", r.out.Order.Quantity.String())
}

// A copy of a signal whose primary order is recorded is a repeat of a
// settled trace: the database answers it 409 duplicate at once (one read,
// settled.go), while the first attempt goes on placing the signal's legs.
// Queued behind that attempt in memory instead, the copy waits out the
// whole lock wait and is told 409 in_progress ("the first attempt is still
// running; retry to learn its outcome") — which TradingView does not retry.
func TestCopyOfARecordedSignalIsNotHeldBehindItsLegs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool, marker := pgtest.OpenPool(t, url), pgtest.OpenPool(t, url)
	fake := binancefake.New(t, binancefake.Options{})
	bigETH(fake)
	fake.SetPosition("ETHUSDT", decimal.RequireFromString("250.5"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue})
	reached, proceed := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: marker, Venues: reg,
		AfterLeg: func(string) {
			if once.CompareAndSwap(false, true) {
				close(reached)
				<-proceed
			}
		}})
	t.Cleanup(svc.Close)
	var opened atomic.Bool
	open := func() {
		if opened.CompareAndSwap(false, true) {
			close(proceed)
		}
	}
	t.Cleanup(open)
	body := `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"legs-copy"}`
	first := make(chan error, 1)
	go func() { _, err := svc.Execute(ctx, input(t, body)); first <- err }()
	<-reached // the primary is recorded; the first part is at the venue
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:legs-copy' AND status = 'dispatched'`))

	_, err = svc.Execute(ctx, input(t, body))
	open()
	require.NoError(t, <-first)
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Duplicate, ge.Code, "a repeat of a recorded signal: %s", ge.Detail)
}
