package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// README ("Orders followed to their end, and cancel"): "A `cancel` then
// `close` therefore sells everything the entry bought". A Binance spot
// buy of 1 ETH (strategy a) fills; its stop-loss's send is not booked
// (Binance books it late, never seen): past the accept window the leg is
// failed as a missed order, asked about for ever (Binance spot may book a
// late request). The trader cancels (the leg is marked: never sent again,
// cancelled if found), then closes: the close sells the 1 ETH. (Counted as
// a pending sell, the failed stop-loss refused it "nothing to sell", and
// every later close of the strategy too.)
func TestCancelThenCloseSellsWhatTheEntryBoughtAfterAMissedSpotStopLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(100_000)}})
	f.SetSpotCommission(decimal.Zero)
	venues := binanceVenues(t, f, binance.MarketSpot)
	fb := followOn(t, b, venues, nil)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","stop_loss":"2800","strategy":"a","trace_id":"rv-spot-sl"}`))
	require.NoError(t, err)
	f.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))
	_, err = fb.work(t, fb.queuedFollow(t, "k:rv-spot-sl"))
	require.NoError(t, err)
	var lockKey, parent, stopID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs WHERE trace_id = 'k:rv-spot-sl'`).
		Scan(&lockKey, &parent, &stopID))
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:rv-spot-sl'`)
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, stopID),
		"the stop-loss is a missed order")
	require.Equal(t, "1", f.Balance("ETH").String(), "the strategy's 1 ETH is free at Binance: nothing rests on it")

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"rv-spot-sl-cancel"}`))
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND cancelled_by = $2`, stopID, cl.TraceID),
		"the cancel marks the missed stop-loss: never sent, cancelled at Binance if it turns up")

	closed, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1",
		"strategy":"a","trace_id":"rv-spot-sl-close"}`))
	require.NoErrorf(t, err, "cancel then close must sell what the entry bought (README); the failed, cancel-marked stop-loss holds the 1 ETH reserved for ever")
	require.Equal(t, "1", closed.Order.Quantity.String())
}
