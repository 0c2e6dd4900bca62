package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
)

// crashTimes returns an AfterVenue hook that "crashes" the first n attempts.
func crashTimes(n int) func(string) {
	crashed := 0
	return func(string) {
		if crashed < n {
			crashed++
			panic(crash{})
		}
	}
}

// Two window executions of one signal die between the venue's answer and
// the commit, so the lock key has two open intents: execution 0's (an
// earlier window) and execution 1's (this window; its claim had recovered
// execution 0, but that recovery rolled back with the crash). A resend of
// execution 1 inside its dedup window is the same signal: it adopts
// execution 1's order and leaves execution 0's to the sweeper. (The claim
// used to pick the open intent sent longest ago, recover it as an earlier
// window's, and place a second order for execution 1 under a new ID.)
func TestWindowResendAfterTwoCrashesAdoptsItsOwnExecution(t *testing.T) {
	t.Parallel()
	const window = 400 * time.Millisecond
	venue := &memVenue{}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, afterVenue: crashTimes(2)})
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`

	executeCrashing(t, b.svc, input(t, body)) // execution 0: placed, never recorded
	require.Equal(t, 1, venue.count())

	time.Sleep(window + 50*time.Millisecond)  // the next execution, after the window
	executeCrashing(t, b.svc, input(t, body)) // execution 1: placed, never recorded
	require.Equal(t, 2, venue.count())
	require.Equal(t, 2, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"),
		"execution 1's recovery of execution 0 rolled back with its claim")
	var exec1 string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT client_order_id FROM dispatch_intents WHERE execution = 1").Scan(&exec1))

	// The sender resends execution 1 at once (inside its dedup window).
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 2, venue.count(), "the resend of execution 1 placed a second order for it")
	require.Equal(t, exec1, out.Order.ClientOrderID, "the resend adopts execution 1's order")
}

// unreachableOnce is a memVenue whose first Place fails before anything is
// sent (a refused connection): the gateway closes the intent unsent.
type unreachableOnce struct {
	*memVenue
	failed bool
}

func (v *unreachableOnce) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if !v.failed {
		v.failed = true
		return exchange.Report{}, fmt.Errorf("connection refused: %w", exchange.ErrUnreachable)
	}
	return v.memVenue.Place(ctx, o)
}

// crashOn returns an AfterVenue hook that "crashes" only the nth attempt
// (1-based).
func crashOn(n int) func(string) {
	calls := 0
	return func(string) {
		calls++
		if calls == n {
			panic(crash{})
		}
	}
}

// Signal A under client key "reuse" finds the venue unreachable (503,
// nothing placed, claim rolled back, intent closed unsent). A different
// signal B then arrives under the same key: the key is unclaimed, so B
// claims it and, the highest intent being unsent, sends under the stored
// client order ID (ReuseID). B's attempt dies after the venue took its
// order. B's resend adopts B's order: the re-armed intent is B's (its
// fingerprint, venue, symbol, action, mode). It used to keep A's, and B's
// resend was refused 422 key_reused ("send a new key": a sender that obeys
// places B twice), while the sweeper would record from A's columns.
func TestReusedUnsentIDTakesTheNewSignalsIdentity(t *testing.T) {
	t.Parallel()
	mem := &memVenue{refusesLate: true}
	venue := &unreachableOnce{memVenue: mem}
	url := pgtest.NewDatabase(t)
	pool, markers := pgtest.OpenPool(t, url), pgtest.OpenPool(t, url)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: markers, Jobs: &jobRecorder{},
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"mem": venue}), AfterVenue: crashOn(2)})
	t.Cleanup(svc.Close)
	ctx := context.Background()
	bodyA := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"reuse"}`
	bodyB := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"2","trace_id":"reuse"}`

	_, err := svc.Execute(ctx, input(t, bodyA))
	requireCode(t, err, codes.Unavailable)
	require.Zero(t, mem.count())
	require.Equal(t, "unsent", string(intentOutcome(t, pool)))

	inB := input(t, bodyB)
	executeCrashing(t, svc, inB) // B placed under the re-armed ID, never recorded
	require.Equal(t, 1, mem.count())

	out, err := svc.Execute(ctx, input(t, bodyB))
	require.NoError(t, err, "B's resend must adopt B's order, not be told the key was reused")
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, mem.count())
	var fingerprint string
	require.NoError(t, pool.QueryRow(ctx, "SELECT fingerprint FROM dispatch_intents").Scan(&fingerprint))
	require.Equal(t, inB.Trace.Fingerprint, fingerprint, "the re-armed intent is B's attempt")
}

// stallThenUnreachable is a memVenue whose first Place hangs (a dial whose
// SYN is dropped) until release, then fails before anything was sent.
type stallThenUnreachable struct {
	*memVenue
	mu               sync.Mutex
	calls            int
	entered, release chan struct{}
}

func (v *stallThenUnreachable) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	v.mu.Lock()
	n := v.calls
	v.calls++
	v.mu.Unlock()
	if n > 0 {
		return v.memVenue.Place(ctx, o)
	}
	v.entered <- struct{}{}
	select {
	case <-v.release:
	case <-ctx.Done():
	}
	return exchange.Report{}, fmt.Errorf("dial tcp: i/o timeout: %w", exchange.ErrUnreachable)
}

// The trace's lock dies with the claim's connection (Postgres restarted,
// failed over, the session was terminated) while the venue call goes on.
// Replica A sends under X and its dial hangs; A's claim connection is
// lost; replica B's resend finds X open past its accept window, sends
// under X again and records it (intent X dispatched). A's dial then fails
// as unreachable: A must not close X as unsent, which would let the next
// execution after a release reuse X at a venue that accepts a filled
// order's ID again, for an order hoox could never record (orders'
// client_order_id is unique).
func TestLateUnsentDoesNotOverwriteAnotherAttemptsOutcome(t *testing.T) {
	t.Parallel()
	mem := &memVenue{refusesLate: true}
	venue := &stallThenUnreachable{memVenue: mem, entered: make(chan struct{}, 1), release: make(chan struct{})}
	svcA, svcB, pool := twoReplicas(t, venue)
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"late-unsent"}`

	doneA := make(chan error, 1)
	go func() {
		_, err := svcA.Execute(ctx, input(t, body))
		doneA <- err
	}()
	<-venue.entered
	// A's claim connection is lost while its venue call is in flight.
	pgtest.TerminateLockHolder(t, pool)

	out, err := svcB.Execute(ctx, input(t, body)) // B's resend: X re-sent and recorded
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	x := out.Order.ClientOrderID
	require.Equal(t, 1, mem.count())

	close(venue.release) // A's dial fails: nothing sent by A
	requireCode(t, <-doneA, codes.Unavailable)

	// An operator releases the key; the signal is sent again: a new
	// execution, which must get a new client order ID and be recorded.
	_, err = db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:late-unsent", By: "test", LockWait: time.Second})
	require.NoError(t, err)
	again, err := svcB.Execute(ctx, input(t, body))
	require.NoError(t, err, "the next execution's order is recorded")
	require.NotEqual(t, x, again.Order.ClientOrderID, "a new execution never reuses X")
	require.Equal(t, mem.count(), count(t, pool, "SELECT count(*) FROM orders"), "every order at the venue is recorded")
}

// stallBeforeIntent is a memVenue that is a SpotTrader (the gateway asks
// it about the symbol after the claim and before the intent): its first
// SpotSymbol stalls until spotRelease, and its first Place until
// placeRelease.
type stallBeforeIntent struct {
	*memVenue
	mu                        sync.Mutex
	spots, places             int
	spotEntered, placeEntered chan struct{}
	spotRelease, placeRelease chan struct{}
}

func (v *stallBeforeIntent) SpotSymbol(ctx context.Context, symbol string) (string, string, bool, error) {
	v.mu.Lock()
	n := v.spots
	v.spots++
	v.mu.Unlock()
	if n == 0 {
		v.spotEntered <- struct{}{}
		select {
		case <-v.spotRelease:
		case <-ctx.Done():
		}
	}
	return symbol, "", false, nil
}

func (v *stallBeforeIntent) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	v.mu.Lock()
	n := v.places
	v.places++
	v.mu.Unlock()
	if n == 0 {
		v.placeEntered <- struct{}{}
		select {
		case <-v.placeRelease:
		case <-ctx.Done():
		}
	}
	return v.memVenue.Place(ctx, o)
}

// The claim's advisory lock and its trace row die with the claim's
// connection, but the attempt goes on. Replica A claims and, before its
// intent, asks the venue (a spot check); A's claim connection is lost.
// Replica B's resend claims the free key, derives the same client order ID
// X (nothing was written yet), commits intent X and sends it. A's intent
// write then finds X armed by another attempt: A answers 503 with nothing
// placed. (It used to re-arm the open X and send it too: at a venue that
// refuses a client order ID only while its first order is open, two fills
// for one signal, A's never recorded.)
func TestLostClaimConnectionLetsOneAttemptSend(t *testing.T) {
	t.Parallel()
	mem := &memVenue{refusesLate: true}
	venue := &stallBeforeIntent{memVenue: mem, spotEntered: make(chan struct{}, 1), placeEntered: make(chan struct{}, 1),
		spotRelease: make(chan struct{}), placeRelease: make(chan struct{})}
	svcA, svcB, pool := twoReplicas(t, venue)
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"two-senders"}`

	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := svcA.Execute(ctx, input(t, body))
		doneA <- err
	}()
	<-venue.spotEntered // A holds the claim and has not written its intent
	pgtest.TerminateLockHolder(t, pool)

	go func() {
		_, err := svcB.Execute(ctx, input(t, body))
		doneB <- err
	}()
	<-venue.placeEntered // B committed intent X and is sending it
	close(venue.spotRelease)
	errA := <-doneA
	close(venue.placeRelease)
	require.NoError(t, <-doneB)

	require.Equal(t, 1, mem.count(), "one signal, one order at the venue (A: %v)", errA)
	requireCode(t, errA, codes.Unavailable) // A placed nothing and says so
	require.Equal(t, mem.count(), count(t, pool, "SELECT count(*) FROM orders"), "every order at the venue is recorded")
}

// heldPool opens a pool on url whose first acquisition waits until release
// is closed (paused is closed when it starts waiting), then fails with
// fail when fail is not nil: an attempt paused just before its intent's
// write, whose write then dies before it reaches Postgres. Every later
// acquisition is served as usual.
func heldPool(t *testing.T, url string, fail error) (pool *pgxpool.Pool, paused <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	p, r := make(chan struct{}), make(chan struct{})
	pool = pgtest.HookedPool(t, url, func(ctx context.Context, n int32) error {
		if n != 1 {
			return nil
		}
		close(p)
		select {
		case <-r:
		case <-ctx.Done():
			return ctx.Err()
		}
		return fail
	})
	return pool, p, r
}

// An intent write whose outcome the attempt cannot know (its connection
// broke) must not settle another attempt's arming as unsent. Replica A
// claims and, just before its intent, loses its claim connection and the
// trace's lock; replica B claims the free key and derives the same client
// order ID X. A commits intent X (armed once) and sends it; B's write of X
// then fails on a connection broken by a Postgres restart. B settles "its"
// arming unsent to free X, and armed-once was all it could name it by, so
// it settled A's: the sender's retry found X provably unsent and sent X
// again, and Binance spot, which refuses a client order ID only while its
// first order is open, filled it twice (torture seed 230601). The retry
// must instead find X open, ask the venue, and adopt A's order.
func TestFailedIntentWriteLeavesAnotherAttemptsArmingOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	venue := gatedVenue("BTCUSDT")
	venue.refusesLate = true
	registry := exchange.NewRegistry(map[string]exchange.Venue{"mem": venue})
	replica := func(markers *pgxpool.Pool) (*gateway.Service, *pgxpool.Pool) {
		pool := pgtest.OpenPool(t, url)
		svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: markers,
			Jobs: &jobRecorder{}, Venues: registry})
		t.Cleanup(svc.Close)
		return svc, pool
	}
	markersA, pausedA, releaseA := heldPool(t, url, nil)
	markersB, pausedB, releaseB := heldPool(t, url, errors.New("write failed: write: broken pipe"))
	svcA, _ := replica(markersA)
	svcB, pool := replica(markersB)
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"broken-write"}`

	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := svcA.Execute(ctx, input(t, body))
		doneA <- err
	}()
	<-pausedA // A holds the claim and has not written its intent
	pgtest.TerminateLockHolder(t, pool)
	go func() {
		_, err := svcB.Execute(ctx, input(t, body))
		doneB <- err
	}()
	<-pausedB // B holds the claim too, and read no intent for X
	close(releaseA)
	<-venue.entered // A committed intent X and is sending it
	close(releaseB)
	requireCode(t, <-doneB, codes.Unavailable) // B placed nothing and says so
	venue.open()
	errA := <-doneA // A's order is at the venue; its claim, and its record, died

	out, err := svcB.Execute(ctx, input(t, body)) // the sender retries B's 503
	require.NoError(t, err, "the retry adopts A's order (A: %v)", errA)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, venue.count(), "one signal, one order at the venue")
	require.Equal(t, venue.count(), count(t, pool, "SELECT count(*) FROM orders"), "every order at the venue is recorded")
}

// twoReplicas starts two gateways (replicas A and B) on one database and
// venue, each with pools of its own, and returns B's claim pool.
func twoReplicas(t *testing.T, venue exchange.Venue) (a, b *gateway.Service, pool *pgxpool.Pool) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	registry := exchange.NewRegistry(map[string]exchange.Venue{"mem": venue})
	replica := func() (*gateway.Service, *pgxpool.Pool) {
		pool := pgtest.OpenPool(t, url)
		svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url),
			Jobs: &jobRecorder{}, Venues: registry})
		t.Cleanup(svc.Close)
		return svc, pool
	}
	a, _ = replica()
	b, pool = replica()
	return a, b, pool
}
