package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/jobs"
)

// killAfterRecord runs args' follow job once on venues as a replica
// killed with -9 right after the look's commit: the fill is recorded, and
// nothing after it runs (the hook panics before the follow-on work).
func killAfterRecord(t *testing.T, b *testBundle, venues *exchange.Registry, args jobs.FollowArgs) {
	t.Helper()
	client := newClient(t, &testBundle{pool: b.pool, url: b.url, venues: venues}, jobs.Config{})
	killed := false
	w := jobs.NewFollowWorker(b.pool, jobs.Config{}, venues, nil, nil).WithAfterRecord(func() {
		killed = true
		panic("replica killed")
	})
	job := &river.Job[jobs.FollowArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1, Kind: args.Kind()}, Args: args}
	func() {
		defer func() { _ = recover() }()
		_ = w.Work(rivertest.WorkContext(context.Background(), client), job)
	}()
	require.True(t, killed, "the run died after its commit")
}

// A Binance USDⓈ-M take-profit fills; its follow job records the fill
// and its replica is killed before it cancels the stop-loss beside it.
// The job's next run (River's rescue of the dead run) finds the
// take-profit already recorded filled: it used to end there, leaving the
// reduce-only stop-loss resting at Binance, where it would cut into the
// symbol's next long, until the stop-loss's own next look (up to five
// minutes). It now cancels the stop-loss, once, however often it runs.
func TestRescuedFollowOfAFilledExitCancelsTheSiblingItsKilledRunLeftResting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"killed-tp"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	require.Equal(t, exchange.RoleTakeProfit, out.Legs[0].Role)
	tpJob := b.queuedFollowOf(t, tp)

	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(3310))
	killAfterRecord(t, b.testBundle, b.venues, tpJob)
	require.Equal(t, "filled", b.row(t, tp).Status, "the killed run recorded the take-profit's fill")
	require.Equal(t, "open", b.row(t, sl).Status, "and died before cancelling the stop-loss")
	slStatus := func() string {
		for _, a := range b.fake.AlgoOrders() {
			if a.ClientAlgoID == sl {
				return a.Status
			}
		}
		return "absent"
	}
	require.Equal(t, "NEW", slStatus())

	for range 2 { // the rescued run, then one more delivery
		res, err := b.work(t, tpJob)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	require.Equal(t, "CANCELED", slStatus(), "the stop-loss of the closed long no longer rests at Binance")
	require.Equal(t, "cancelled", b.row(t, sl).Status)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'
		AND detail->>'client_order_id' = $1 AND detail->>'because_filled' = $2`, sl, tp), "the cancel is recorded once")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_filled'
		AND detail->>'client_order_id' = $1`, tp), "the fill is recorded once")
}

// A Binance USDⓈ-M limit entry with a take-profit and a stop-loss fills;
// its follow job records the fill (which plans the exits, migration
// 00015) and its replica is killed before it places them. The rescued
// run used to find the entry final and place nothing, leaving the filled
// long unprotected until the sweeper's pass over open legs; it now places
// both exits, once, however often it runs.
func TestRescuedFollowOfAFilledEntryPlacesTheExitsItsKilledRunLeftUnplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, venues, fb := futuresFollowing(t) // ETHUSDT at 3000
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":"3100","stop_loss":"2900","trace_id":"killed-entry"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := fb.queuedFollow(t, "k:killed-entry")
	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))

	killAfterRecord(t, b, venues, args)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'filled'`, out.Order.ClientOrderID))
	require.Len(t, openLegs(t, b), 2, "the fill planned the exits")
	require.Empty(t, f.AlgoOrders(), "and the run died before placing them")

	for range 2 { // the rescued run, then one more delivery
		res, err := fb.work(t, args)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	require.Len(t, f.AlgoOrders(), 2, "the long's take-profit and stop-loss rest at Binance, placed once")
	require.Empty(t, openLegs(t, b))
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'dispatched'`))
}

// A follow job River's rescuer takes from a dead replica runs again
// within FollowMaxInterval however often it was rescued or failed before:
// River's own backoff, (errors+1)^4 s, waited 81 s after a third rescue
// and almost three hours after a tenth, while the order it follows may
// have filled. Measured by the rescuer's own clock: its error's time and
// the retry it scheduled.
func TestARescuedFollowJobRunsAgainWithinTheFollowInterval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","price":"90","trace_id":"often"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	timeout := jobs.NewFollowWorker(b.pool, jobs.Config{}, b.venues, nil, nil).Timeout(nil)
	leaveRunning(t, b, "k:often", timeout+30*time.Second)
	// Nine earlier attempts ended by rescues.
	_, err = b.pool.Exec(ctx, `UPDATE river_job SET attempt = 10, errors = (SELECT array_agg(jsonb_build_object(
		'at', now() - (10 - i) * interval '1 minute', 'attempt', i, 'error', 'Stuck job rescued by JobRescuer', 'trace', '')::jsonb)
		FROM generate_series(1, 9) i) WHERE kind = 'follow' AND args->>'trace_id' = 'k:often'`)
	require.NoError(t, err)

	startClient(t, b.testBundle, jobs.Config{})
	var wait time.Duration
	require.Eventually(t, func() bool {
		var secs float64
		err := b.pool.QueryRow(ctx, `SELECT extract(epoch FROM scheduled_at - (errors[array_length(errors, 1)]->>'at')::timestamptz)
			FROM river_job WHERE kind = 'follow' AND args->>'trace_id' = 'k:often' AND state = 'retryable' AND array_length(errors, 1) = 10`).Scan(&secs)
		wait = time.Duration(secs * float64(time.Second))
		return err == nil
	}, 45*time.Second, 100*time.Millisecond, "the rescuer took the dead run")
	require.LessOrEqual(t, wait, jobs.FollowMaxInterval+time.Second, "looked at again within the follow interval, not in hours")
	require.Greater(t, wait, time.Duration(0))
}

// Below the cap a failed or rescued follow job keeps River's backoff: a
// first retry in about a second, a third in about 81 s.
func TestFollowRetriesKeepRiversBackoffBelowTheFollowInterval(t *testing.T) {
	t.Parallel()
	w := jobs.NewFollowWorker(nil, jobs.Config{}, nil, nil, nil)
	for _, c := range []struct {
		errors int
		want   time.Duration
	}{{0, time.Second}, {2, 81 * time.Second}, {4, jobs.FollowMaxInterval}, {20, jobs.FollowMaxInterval}} {
		job := &river.Job[jobs.FollowArgs]{JobRow: &rivertype.JobRow{Errors: make([]rivertype.AttemptError, c.errors)}}
		before := time.Now()
		got := w.NextRetry(job).Sub(before)
		require.InDelta(t, c.want.Seconds(), got.Seconds(), c.want.Seconds()*0.11+1, "after %d errors", c.errors)
		require.LessOrEqual(t, got, jobs.FollowMaxInterval+time.Second)
	}
}

// cutAtCancel is a Binance venue whose Cancel ends the run's context
// first, as River's timeout or a shutdown would while the follow-on
// work's cancel is on its way.
type cutAtCancel struct {
	*binance.Venue
	cut context.CancelFunc
}

func (v cutAtCancel) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	v.cut()
	return v.Venue.Cancel(ctx, o)
}

// A take-profit's follow job whose context ends (River's timeout, a
// shutdown) while it cancels the stop-loss beside it used to complete as
// if the work were done, leaving the stop-loss resting; it now fails, so
// River runs it again, and the next run cancels the stop-loss.
func TestFollowCutDuringTheSiblingsCancelRunsAgainAndCancelsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"cut-tp"}`))
	require.NoError(t, err)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	tpJob := b.queuedFollowOf(t, tp)
	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(3310))

	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: b.fake.APIKey(), APISecret: b.fake.APISecret(), BaseURL: b.fake.URL})
	require.NoError(t, err)
	rctx, cut := context.WithCancel(ctx)
	defer cut()
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": cutAtCancel{Venue: v, cut: cut}})
	client := newClient(t, &testBundle{pool: b.pool, url: b.url, venues: venues}, jobs.Config{})
	w := jobs.NewFollowWorker(b.pool, jobs.Config{}, venues, nil, nil)
	job := &river.Job[jobs.FollowArgs]{JobRow: &rivertype.JobRow{ID: 1, Attempt: 1, Kind: tpJob.Kind()}, Args: tpJob}
	err = w.Work(rivertest.WorkContext(rctx, client), job)
	require.ErrorIs(t, err, context.Canceled, "the job is not completed with its follow-on work undone")
	require.Equal(t, "filled", b.row(t, tp).Status)
	require.Equal(t, "open", b.row(t, sl).Status)

	res, err := b.work(t, tpJob)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, "cancelled", b.row(t, sl).Status)
	for _, a := range b.fake.AlgoOrders() {
		if a.ClientAlgoID == sl {
			require.Equal(t, "CANCELED", a.Status)
		}
	}
}
