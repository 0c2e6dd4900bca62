package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/jobs"
)

// ageOrder makes the order clientOrderID look placed age ago.
func ageOrder(t *testing.T, b *exitsBundle, clientOrderID string, age time.Duration) {
	t.Helper()
	_, err := b.pool.Exec(context.Background(), `UPDATE orders SET created_at = now() - $2::bigint * interval '1 second' WHERE client_order_id = $1`,
		clientOrderID, int64(age.Seconds()))
	require.NoError(t, err)
}

// A take-profit that fills at Binance after the last look, the next look
// coming at the exit's follow horizon, is recorded filled (its fill event,
// the cancel of its stop-loss), not left open and unfollowed: the horizon
// asks the venue before giving up on an exit.
func TestExitFilledSinceTheLastLookIsRecordedFilledAtItsHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-horizon-fill"}`))
	require.NoError(t, err)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	job := b.queuedFollowOf(t, tp)
	res, err := b.work(t, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)

	// The take-profit fills at Binance before the next look, which comes
	// at the horizon.
	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(3310))
	ageOrder(t, b, tp, jobs.FollowExitHorizon+time.Minute)
	res, err = b.work(t, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	row := b.row(t, tp)
	require.Equal(t, "filled", row.Status, "the take-profit filled at the venue; hoox shows it %s", row.Status)
	require.Nil(t, row.UnfollowedAt)
	require.EqualValues(t, 0, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_unfollowed' AND detail->>'client_order_id' = $1`, tp))
	require.Equal(t, "cancelled", b.row(t, sl).Status, "the stop-loss of the filled take-profit is cancelled")
}

// At its horizon, with the venue not answering, an exit is not unfollowed
// unasked: the job looks again later, until the horizon plus
// FollowExitGrace, after which it is unfollowed with the lookup's error as
// the reason.
func TestExitAtItsHorizonIsUnfollowedUnaskedOnlyAfterTheGrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-horizon-down"}`))
	require.NoError(t, err)
	tp := out.Legs[0].ClientOrderID
	job := b.queuedFollowOf(t, tp)
	// A replica that cannot reach the venue (not configured there).
	down := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
		jobs.NewFollowWorker(b.pool, jobs.Config{}, exchange.NewRegistry(map[string]exchange.Venue{}), nil, nil))
	work := func() *rivertest.WorkResult {
		t.Helper()
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(ctx) }()
		res, err := down.Work(ctx, t, tx, job, nil)
		require.NoError(t, err)
		return res
	}

	ageOrder(t, b, tp, jobs.FollowExitHorizon+time.Minute)
	require.Equal(t, river.EventKindJobSnoozed, work().EventKind, "the venue unasked, the exit is looked at again")
	row := b.row(t, tp)
	require.Equal(t, "open", row.Status)
	require.Nil(t, row.UnfollowedAt)

	ageOrder(t, b, tp, jobs.FollowExitHorizon+jobs.FollowExitGrace+time.Minute)
	require.Equal(t, river.EventKindJobCompleted, work().EventKind, "past the grace the job ends")
	row = b.row(t, tp)
	require.Equal(t, "open", row.Status)
	require.NotNil(t, row.UnfollowedAt)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_unfollowed'
AND detail->>'client_order_id' = $1 AND detail->>'reason' LIKE 'the venue could not be asked:%'`, tp))
}
