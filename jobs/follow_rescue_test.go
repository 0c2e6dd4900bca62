package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/jobs"
)

// leaveRunning makes the follow job of traceID's order look as a replica
// killed with -9 leaves it: `running`, attempt 1, by a River client that no
// longer exists, its attempt begun ago.
func leaveRunning(t *testing.T, b *followBundle, traceID string, ago time.Duration) {
	t.Helper()
	tag, err := b.pool.Exec(context.Background(), `UPDATE river_job SET state = 'running', attempt = 1,
		attempted_at = now() - $2::bigint * interval '1 millisecond', attempted_by = ARRAY['dead-replica']
		WHERE kind = 'follow' AND args->>'trace_id' = $1`, traceID, ago.Milliseconds())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}

// A follow job left `running` by a replica killed with -9 holds its
// order's follow (the job is unique while live) until River's rescuer
// runs it again: an hour by River's default, then eleven minutes, during
// which a fill went unrecorded (its sibling exit uncancelled, a spot sale
// still counted in the ledger, a limit entry's exits not planned: the
// simulator's stuck_follow). The rescuer now takes it for dead a margin
// past the follow's own timeout, so the fill is recorded within about a
// minute of that timeout: here the dead worker's attempt began its
// timeout plus 30 s ago, and the fill is recorded within 30 s.
func TestAFollowJobLeftRunningByADeadReplicaIsFollowedAgainWithinAMinuteOfItsTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","price":"90","trace_id":"stuck"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	b.queuedFollow(t, "k:stuck")

	timeout := jobs.NewFollowWorker(b.pool, jobs.Config{}, b.venues, nil, nil).Timeout(nil)
	leaveRunning(t, b, "k:stuck", timeout+30*time.Second)
	n, err := b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("89"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the resting buy filled at the venue")

	startClient(t, b.testBundle, jobs.Config{})
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:stuck' AND status = 'filled'") == 1
	}, 30*time.Second, 100*time.Millisecond, "the fill of an order whose follow job a dead replica left running is recorded")
}

// River cancels a worker's context at its timeout, but a worker that was
// merely slow may still be returning: the rescuer leaves a follow job 10 s
// past its timeout alone (it is taken a margin past it), while the same
// pass takes one that is past its timeout and the margin.
func TestAFollowJobJustPastItsTimeoutIsNotTakenForDead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	for _, tr := range []string{"dead", "slow"} {
		out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","price":"90","trace_id":"`+tr+`"}`))
		require.NoError(t, err)
		require.Equal(t, "open", out.Order.Status)
	}
	timeout := jobs.NewFollowWorker(b.pool, jobs.Config{}, b.venues, nil, nil).Timeout(nil)
	leaveRunning(t, b, "k:dead", timeout+30*time.Second)
	leaveRunning(t, b, "k:slow", timeout+10*time.Second)
	n, err := b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("89"))
	require.NoError(t, err)
	require.EqualValues(t, 2, n, "both resting buys filled at the venue")

	startClient(t, b.testBundle, jobs.Config{})
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:dead' AND status = 'filled'") == 1
	}, 25*time.Second, 100*time.Millisecond, "the rescuer's pass took the dead job")
	// The rescuer passes every 30 s; the slow job is due 5 s after it was
	// left running, so this pass, the one that took the dead job, saw it
	// inside its margin.
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'follow' AND args->>'trace_id' = 'k:slow'
		AND state = 'running' AND attempt = 1 AND attempted_by = ARRAY['dead-replica']`), "the slow worker's job is still its own")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:slow' AND status = 'open'"),
		"nothing else looked at the slow worker's order")
}

// A follow job run again while its first run is still finishing (a
// worker slower than the rescuer's margin, a replica paused past it)
// does no harm: both runs look at the filled limit entry at once, and its
// fill is recorded once and its exits placed once.
func TestTwoRunsOfOneFollowJobAtOnceRecordTheFillAndPlaceTheExitsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, venues, fb := futuresFollowing(t) // ETHUSDT at 3000
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"twice"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := fb.queuedFollow(t, "k:twice")
	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))

	client := newClient(t, &testBundle{pool: b.pool, url: b.url, venues: venues}, jobs.Config{})
	w := jobs.NewFollowWorker(b.pool, jobs.Config{}, venues, nil, nil)
	wctx := rivertest.WorkContext(ctx, client)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range errs {
		wg.Go(func() {
			<-start
			job := &river.Job[jobs.FollowArgs]{JobRow: &rivertype.JobRow{ID: int64(i + 1), Attempt: i + 1, Kind: args.Kind()}, Args: args}
			errs[i] = w.Work(wctx, job)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, fmt.Sprintf("run %d", i+1))
	}

	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'filled'`, out.Order.ClientOrderID))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:twice' AND event = 'order_filled'`),
		"the fill is recorded once")
	require.Len(t, f.AlgoOrders(), 2, "the entry's take-profit and stop-loss, placed once")
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'dispatched'`))
}
