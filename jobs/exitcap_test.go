package jobs_test

import (
	"context"
	"testing"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify/notifyfake"
)

// A limit entry's exits go out only when it fills, perhaps hours after the
// cap was counted: here the symbol's MAX_NUM_ALGO_ORDERS (1) fills while
// the entry rests. When the follow job records the fill, Binance refuses
// the stop-loss (-4045): the leg is recorded rejected with Binance's
// reason (settled: no sweep sends it again), and a "rejected"
// notification is queued with it through the worker's River client — the
// trader learns the position stands without its stop.
func TestLimitEntryExitRefusedAtTheAlgoCapAfterTheFillIsRejectedAndNotified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	f.SetMaxNumAlgoOrders("ETHUSDT", 1)
	venues := binanceVenues(t, f, binance.MarketFutures)
	notifier, err := jobs.NewNotifier(notifyfake.New(t).Config())
	require.NoError(t, err)
	fb := followOn(t, b, venues, notifier)
	gw := fb.gw

	f.FillAlgoCapOnNextOrder("ETHUSDT") // after the count, when the entry arrives
	out, err := gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","stop_loss":"2900","trace_id":"cap-limit"}`))
	require.NoError(t, err, "the cap had room when it was counted")
	require.Equal(t, "open", out.Order.Status)

	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))
	res, err := fb.work(t, fb.queuedFollow(t, "k:cap-limit"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:cap-limit' AND role = 'stop_loss'
		AND status = 'rejected' AND reject_reason = 'Reach max stop order limit.'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:cap-limit' AND outcome = 'rejected'`))
	require.Empty(t, openLegs(t, b), "nothing left for the sweeper to resend into the same refusal")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:cap-limit' AND role = 'primary' AND status = 'filled'`))
	require.EqualValues(t, 3, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'rejected'
		AND args->'message'->>'trace_id' = 'k:cap-limit' AND args->'message'->>'detail' LIKE 'stop_loss of order % was not placed: Reach max stop order limit.'`),
		"queued with the leg's record, one job per channel (Telegram, Discord, Slack)")
}
