package gateway_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/timing"
)

// A dead attempt placed the order (its answer was lost with the process),
// then the operator engaged the kill switch. The sender's resend must not
// be told "nothing was placed": the venue holds this signal's order, and a
// sender (or a human) who believes the 503 places it again by hand once
// trading resumes. Either the order is looked up and answered (a lookup
// places nothing), or the refusal says an order may exist.
func TestKillSwitchResendAfterCrashDoesNotSayNothingWasPlaced(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, crashOnce())
	ctx := context.Background()
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-after-crash"}`

	executeCrashing(t, b.svc, input(t, body))
	require.Equal(t, 1, b.venue.count(), "the dead attempt's order is at the venue")

	_, err := db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
	require.NoError(t, err)
	resend, err := gateway.ParseInput([]byte(body), "", time.Now())
	require.NoError(t, err)
	out, err := b.svc.Execute(ctx, resend)
	if err == nil {
		require.NotNil(t, out.Order, "a 2xx names the order the venue holds")
		return
	}
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.False(t, strings.Contains(ge.Detail, "nothing was placed"),
		"answered %s %q although the venue holds this signal's order", ge.Code, ge.Detail)
}

// A window-mode signal past its dedup window is a new order. When an
// earlier execution's dead attempt may still be accepted, the new
// execution is not placed, and the answer is 409 in_progress. No attempt
// of this execution is running, and TradingView resends only a 5xx (README
// "Why"; docs/TORTURE.md "Clients"): a 409 ends the alert, so the new
// execution is never placed — a dropped order, with an answer that says
// its "first attempt is still running". The answer must be one the sender
// resends (503 with the Retry-After), or the order placed.
func TestNextWindowExecutionBehindADeadOneIsAnsweredSoTheSenderResends(t *testing.T) {
	t.Parallel()
	const window = 30 * time.Millisecond
	venue := &memVenue{dropNext: true, window: 2 * time.Second}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, afterVenue: crashOnce()})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	executeCrashing(t, b.svc, input(t, body))

	time.Sleep(window + 10*time.Millisecond)
	out, err := b.svc.Execute(context.Background(), input(t, body))
	if err == nil {
		require.NotNil(t, out.Order)
		return
	}
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Unavailable, ge.Code,
		"a new execution nobody else is running was answered %s (%q): TradingView does not resend it", ge.Code, ge.Detail)
}

// A repeat of a cancel answers 409 duplicate with original.cancelled, the
// orders the first attempt cancelled (README "cancel"). Copies of that
// repeat that queued behind it on one replica are answered from its flight
// (repeatAnswer), which leaves the list out: the same resend gets two
// different "original outcomes" — one says what was cancelled, the others
// say nothing was.
func TestCopiesOfARepeatedCancelShowWhatItCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	open := func(extra string) *pgxpool.Pool { return pgtest.OpenPool(t, url+extra) }
	paperVenue := paper.New(paper.Config{Pool: open("")})
	venues := exchange.NewRegistry(map[string]exchange.Venue{"paper": paperVenue})
	first := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: open(""), MarkerPool: open(""), Venues: venues})
	t.Cleanup(first.Close)

	placed, err := first.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"limit","price":"90","trace_id":"l1"}`))
	require.NoError(t, err)
	require.Equal(t, "open", placed.Order.Status)
	body := `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"c1"}`
	out, err := first.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Len(t, out.Cancelled, 1)

	// Another replica, whose claim pool (one connection) is busy for a
	// moment, so the resent copies queue behind the first of them.
	sep := "?"
	if !strings.Contains(url, "://") {
		sep = " "
	} else if strings.Contains(url, "?") {
		sep = "&"
	}
	claims := open(sep + "pool_max_conns=1")
	cfg := gateway.DefaultConfig()
	cfg.Timing.LockWait = timing.MaxLockWait
	second := gateway.New(cfg, gateway.Deps{Pool: claims, MarkerPool: open(""), Venues: venues})
	t.Cleanup(second.Close)
	busy, err := claims.Acquire(ctx)
	require.NoError(t, err)

	const n = 4
	errs := make([]error, n)
	var wg sync.WaitGroup
	wg.Go(func() { _, errs[0] = second.Execute(ctx, input(t, body)) })
	time.Sleep(50 * time.Millisecond)
	for i := 1; i < n; i++ {
		wg.Go(func() { _, errs[i] = second.Execute(ctx, input(t, body)) })
	}
	require.Eventually(t, func() bool { return second.CopiesWaiting() == n-1 }, 2*time.Second, time.Millisecond)
	busy.Release()
	wg.Wait()

	for i, err := range errs {
		ge := requireCode(t, err, codes.Duplicate)
		require.Equal(t, []string{placed.Order.ClientOrderID}, cancelIDs(ge.Original.Cancelled),
			"copy %d of the resent cancel: original.cancelled", i)
	}
}

// In window mode every execution of a signal shares one lock key, and the
// reconcile of an earlier execution holds that key's advisory lock while it
// asks the venue (db.Reconcile: "The lock is held across decide"; up to
// HOOX_VENUE_TIMEOUT). A new execution arriving past the dedup window in
// that time waits HOOX_LOCK_WAIT and is answered 409 in_progress ("the
// first attempt is still running") although no attempt of it runs, and it
// is not placed. TradingView does not resend a 409: the new order is lost.
// The answer must be one the sender resends (503), or the order placed.
func TestNewWindowExecutionBehindAnEarlierOnesReconcileIsNotAnsweredInProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const window = 30 * time.Millisecond
	venue := &memVenue{loseNext: true}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, lockWait: 300 * time.Millisecond})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	first, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, first.Status, "the earlier execution's answer was lost")

	// Its reconcile job runs, asking a slow venue under the lock key.
	asking, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = db.Reconcile(ctx, b.pool, first.TraceID, *clientOrderIDOf(t, b, first.TraceID), time.Second,
			func(context.Context, db.ReconcileState) (db.Resolution, error) {
				close(asking)
				<-release
				return db.Resolution{}, context.DeadlineExceeded // the lookup timed out: rolled back
			})
	}()
	<-asking
	t.Cleanup(func() { <-done })
	defer close(release)

	time.Sleep(window + 10*time.Millisecond) // a new execution, past the window
	out, err := b.svc.Execute(ctx, input(t, body))
	if err == nil {
		require.NotNil(t, out.Order)
		return
	}
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.NotEqual(t, codes.InProgress, ge.Code,
		"a new execution was answered %s (%q); no attempt of it is running and the sender does not resend a 409", ge.Code, ge.Detail)
}

func clientOrderIDOf(t *testing.T, b *memBundle, traceID string) *string {
	t.Helper()
	var id *string
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT client_order_id FROM trace_ids WHERE trace_id = $1", traceID).Scan(&id))
	require.NotNil(t, id)
	return id
}
