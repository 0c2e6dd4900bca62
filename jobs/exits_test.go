package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify/notifyfake"
)

// exitsBundle is a gateway on both Binance markets (one fake) whose
// follow jobs are queued, not worked, and a follow worker that notifies
// with the default events.
type exitsBundle struct {
	*followBundle
	fake *binancefake.Server
}

func setupExits(t *testing.T) *exitsBundle {
	t.Helper()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.Zero)
	b.venues = binanceVenues(t, f, binance.MarketSpot, binance.MarketFutures)
	cfg := notifyfake.New(t).Config()
	cfg.Events = nil // the defaults: order_filled is one
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	return &exitsBundle{followBundle: followOn(t, b, b.venues, notifier), fake: f}
}

// row reads the order clientOrderID.
func (b *exitsBundle) row(t *testing.T, clientOrderID string) db.OrderRow {
	t.Helper()
	o, err := db.GetOrder(context.Background(), b.pool, clientOrderID)
	require.NoError(t, err)
	return o
}

// attachedStatus is the status each exit of row shows, by role.
func attachedStatus(row db.OrderRow) map[string]string {
	out := map[string]string{}
	for _, a := range row.Attached() {
		out[a.Role] = a.Status
	}
	return out
}

// A Binance USDⓈ-M entry's take-profit and stop-loss are followed from
// the moment they are recorded (the gateway queues their follow jobs in
// the commit that records them): while they rest the jobs snooze; once the
// price reaches the take-profit, its job records it filled — quantity,
// the triggered order's price and fee — notifies order_filled, and cancels
// the stop-loss at Binance, recording it cancelled; a second delivery of
// either job records nothing more.
func TestFuturesExitFillIsRecordedOnceAndTheOtherExitCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-exits"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	require.Equal(t, exchange.RoleTakeProfit, out.Legs[0].Role)
	tpJob, slJob := b.queuedFollowOf(t, tp), b.queuedFollowOf(t, sl)

	for _, args := range []jobs.FollowArgs{tpJob, slJob} {
		res, err := b.work(t, args)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "resting at Binance: looked at again later")
	}
	require.Equal(t, map[string]string{exchange.RoleTakeProfit: db.AttachedPlaced}, attachedStatus(b.row(t, tp)))

	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(3310))
	for range 2 { // a second delivery changes nothing
		res, err := b.work(t, tpJob)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	require.True(t, b.fake.Position("ETHUSDT").IsZero(), "the take-profit closed the position")
	tpRow := b.row(t, tp)
	require.Equal(t, "filled", tpRow.Status)
	require.Equal(t, "1", tpRow.FilledQuantity.Decimal.String())
	require.Equal(t, "3310", tpRow.AvgPrice.Decimal.String(), "the triggered order's price, not the trigger")
	require.Equal(t, "1.324", tpRow.Fee.Decimal.String(), "0.04 % of 3310 USDT, from the triggered order's trades")
	require.Equal(t, map[string]string{exchange.RoleTakeProfit: db.AttachedFilled}, attachedStatus(tpRow))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:fut-exits' AND event = 'order_filled'
		AND detail->>'client_order_id' = $1`, tp))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->>'channel' = 'telegram'
		AND args->'message'->>'event' = 'order_filled' AND args->'message'->>'client_order_id' = $1`, tp), "the exit's fill is notified once")

	slRow := b.row(t, sl)
	require.Equal(t, "cancelled", slRow.Status, "the stop-loss of a closed position is cancelled")
	require.Equal(t, map[string]string{exchange.RoleStopLoss: db.AttachedCancelled}, attachedStatus(slRow))
	for _, a := range b.fake.AlgoOrders() {
		if a.ClientAlgoID == sl {
			require.Equal(t, "CANCELED", a.Status, "cancelled at Binance, not only in hoox's record")
		}
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'
		AND detail->>'client_order_id' = $1 AND detail->>'because_filled' = $2`, sl, tp))
	res, err := b.work(t, slJob)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the stop-loss's own job ends: nothing left to follow")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'`))
}

// A Binance spot entry's OCO list is followed: once the price falls to its
// stop-loss, the job records the list filled by the stop-loss (the
// take-profit shows cancelled: Binance expired it), once however often it
// runs, and the sale leaves the strategy's spot ledger — so the next close
// sells none of the coins the account holds by hand. Without the follow,
// the ledger still counted the sold coin and the close sold a manual one.
func TestSpotOCOExecutionMovesTheLedgerOnceAndTheNextCloseSellsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	b.fake.SetBalance("ETH", decimal.NewFromInt(5)) // held by hand
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","strategy":"s1","trace_id":"spot-oco"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	list := out.Legs[0].ClientOrderID
	require.Equal(t, exchange.RoleOCO, out.Legs[0].Role)
	ledger := func() string {
		var q decimal.Decimal
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT quantity FROM spot_ledger WHERE strategy = 's1'`).Scan(&q))
		return q.String()
	}
	require.Equal(t, "1", ledger())
	job := b.queuedFollowOf(t, list)
	res, err := b.work(t, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)

	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(2650))
	require.Equal(t, "5", b.fake.Balance("ETH").String(), "the list sold the coin the strategy bought")
	for range 2 {
		res, err := b.work(t, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	row := b.row(t, list)
	require.Equal(t, "filled", row.Status)
	require.Equal(t, "1", row.FilledQuantity.Decimal.String())
	require.Equal(t, "2650", row.AvgPrice.Decimal.String())
	require.Equal(t, "USDT", *row.FeeAsset)
	require.Equal(t, map[string]string{exchange.RoleTakeProfit: db.AttachedCancelled, exchange.RoleStopLoss: db.AttachedFilled},
		attachedStatus(row), "the stop-loss executed, Binance expired the take-profit")
	require.Equal(t, "0", ledger(), "the sale left the ledger, once")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_filled'
		AND detail->>'client_order_id' = $1 AND detail->>'executed_exit' = 'stop_loss'`, list))

	_, err = b.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
		"strategy":"s1","trace_id":"spot-close"}`))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	require.Equal(t, "5", b.fake.Balance("ETH").String(), "the coins held by hand stay")
}

// An OCO that executed only partly is still the venue's to finish; a list
// cancelled as a whole (the cancel action, by hand) is recorded cancelled,
// with nothing sold and both exits cancelled.
func TestSpotOCOCancelledAtTheVenueIsRecordedCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","strategy":"s1","trace_id":"spot-oco-cancel"}`))
	require.NoError(t, err)
	list := out.Legs[0].ClientOrderID
	b.fake.ExpireList(list)
	res, err := b.work(t, b.queuedFollowOf(t, list))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	row := b.row(t, list)
	require.Equal(t, "cancelled", row.Status)
	require.Equal(t, map[string]string{exchange.RoleTakeProfit: db.AttachedCancelled, exchange.RoleStopLoss: db.AttachedCancelled}, attachedStatus(row))
	var q decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT quantity FROM spot_ledger WHERE strategy = 's1'`).Scan(&q))
	require.Equal(t, "1", q.String(), "nothing was sold")
}

// An exit outlives its trace: after the purge removed the trace, the
// exit is still followed (its row and its leg's stored order are all a
// look needs); at FollowExitHorizon, still resting, it is recorded as no
// longer followed — an order_unfollowed event, attached not_followed —
// and the job ends.
func TestExitIsFollowedPastItsTraceUntilItsHorizon(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-horizon"}`))
	require.NoError(t, err)
	tp := out.Legs[0].ClientOrderID
	job := b.queuedFollowOf(t, tp)
	_, err = b.pool.Exec(ctx, `DELETE FROM trace_ids WHERE trace_id = 'k:fut-horizon'`)
	require.NoError(t, err)
	res, err := b.work(t, job)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "the trace's purge does not end an exit's follow")

	_, err = b.pool.Exec(ctx, `UPDATE orders SET created_at = now() - $2::bigint * interval '1 second' WHERE client_order_id = $1`,
		tp, int64(jobs.FollowExitHorizon.Seconds())+60)
	require.NoError(t, err)
	for range 2 {
		res, err = b.work(t, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind, "past the horizon the job ends")
	}
	row := b.row(t, tp)
	require.Equal(t, "open", row.Status, "the row keeps its last known state")
	require.NotNil(t, row.UnfollowedAt)
	require.Equal(t, map[string]string{exchange.RoleTakeProfit: db.AttachedNotFollowed}, attachedStatus(row))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_unfollowed' AND detail->>'client_order_id' = $1`, tp))
}

// An exit whose sibling was recorded filled by another path (the cancel
// action finding it filled, an adoption — no follow job of the filled
// exit to cancel the others) is cancelled by its own job at its next look,
// instead of being left resting at Binance.
func TestExitCancelsItselfOnceItsSiblingIsRecordedFilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-sibling"}`))
	require.NoError(t, err)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(3310))
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	ok, err := db.ApplyOrderUpdate(ctx, tx, tp, db.OrderUpdate{Status: exchange.StatusFilled, FilledQuantity: decimal.NewFromInt(1)}, nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, tx.Commit(ctx))

	res, err := b.work(t, b.queuedFollowOf(t, sl))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, "cancelled", b.row(t, sl).Status)
	for _, a := range b.fake.AlgoOrders() {
		if a.ClientAlgoID == sl {
			require.Equal(t, "CANCELED", a.Status)
		}
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'
		AND detail->>'client_order_id' = $1 AND detail->>'because_filled' = $2`, sl, tp))
}

// An exit the venue no longer holds — cancelled by hand at Binance while
// hoox could not look, then forgotten by the algo query after 3 days — is
// recorded as ended (expired, with the venue's reason), once, and no
// longer followed; one that merely rests is not touched.
func TestExitTheVenueNoLongerHoldsIsRecordedEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-gone"}`))
	require.NoError(t, err)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	require.NoError(t, b.fake.CancelAlgoOrder(sl))
	b.fake.Advance(4 * 24 * time.Hour)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '4 days' WHERE trace_id = 'k:fut-gone'`)
	require.NoError(t, err)

	// The fake's clock jumped 4 days: the adapter's first request is
	// refused for its timestamp and resyncs (the look snoozes); the next
	// one finds nothing under the ID.
	res, err := b.work(t, b.queuedFollowOf(t, sl))
	require.NoError(t, err)
	if res.EventKind == river.EventKindJobSnoozed {
		res, err = b.work(t, b.queuedFollowOf(t, sl))
		require.NoError(t, err)
	}
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	res, err = b.work(t, b.queuedFollowOf(t, sl))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "a second delivery changes nothing")
	row := b.row(t, sl)
	require.Equal(t, "expired", row.Status)
	require.Equal(t, map[string]string{exchange.RoleStopLoss: db.AttachedEnded}, attachedStatus(row))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_expired' AND detail->>'client_order_id' = $1`, sl))

	res, err = b.work(t, b.queuedFollowOf(t, tp))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "the take-profit still rests")
	require.Equal(t, "open", b.row(t, tp).Status)
}

// A Binance spot buy's lone stop-loss (one STOP_LOSS sell order) is
// followed like a list: once the price falls to it, its sale is recorded
// and leaves the strategy's spot ledger, so the next close sells none of
// the coins held by hand.
func TestSpotLoneExitFillMovesTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupExits(t)
	b.fake.SetBalance("ETH", decimal.NewFromInt(5)) // held by hand
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","strategy":"s2","trace_id":"spot-lone"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	sl := out.Legs[0].ClientOrderID
	require.Equal(t, exchange.RoleStopLoss, out.Legs[0].Role)
	job := b.queuedFollowOf(t, sl)
	b.fake.MovePrice("ETHUSDT", decimal.NewFromInt(2650))
	require.Equal(t, "5", b.fake.Balance("ETH").String(), "the stop sold the coin the strategy bought")
	for range 2 {
		res, err := b.work(t, job)
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	row := b.row(t, sl)
	require.Equal(t, "filled", row.Status)
	require.Equal(t, map[string]string{exchange.RoleStopLoss: db.AttachedFilled}, attachedStatus(row))
	var q decimal.Decimal
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT quantity FROM spot_ledger WHERE strategy = 's2'`).Scan(&q))
	require.Equal(t, "0", q.String(), "the sale left the ledger, once")

	_, err = b.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
		"strategy":"s2","trace_id":"spot-lone-close"}`))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	require.Equal(t, "5", b.fake.Balance("ETH").String())
}
