package jobs_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// A Binance limit entry with a take-profit and a stop-loss rests; its
// exits are placed once, right after its follow job records it filled (the
// fill plans the legs, migration 00015) — not before, and not again by the
// sweeper or a second delivery of the job. USDⓈ-M: two algo orders of
// the quantity filled, the percent taken from the limit's fill price;
// spot: one OCO list for what the buy received net of its ETH fee.
func TestBinanceLimitEntryExitsArePlacedOnceWhenTheFollowJobRecordsTheFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.RequireFromString("0.001"))
	at := func(m binance.Market) exchange.Venue {
		v, err := binance.New(binance.Config{Market: m, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
		require.NoError(t, err)
		return v
	}
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance": at(binance.MarketSpot), "binance-futures": at(binance.MarketFutures)})
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: venues, Jobs: client})
	t.Cleanup(gw.Close)
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, jobs.NewFollowWorker(b.pool, jobs.Config{}, venues, nil, nil))
	fb := &followBundle{testBundle: b, gw: gw, worker: worker}

	fut, err := gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"lim-fut"}`))
	require.NoError(t, err)
	require.Equal(t, "open", fut.Order.Status)
	spot, err := gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3100","stop_loss":"2800","trace_id":"lim-spot"}`))
	require.NoError(t, err)
	require.Equal(t, "open", spot.Order.Status)
	require.Empty(t, fut.Legs)
	require.Empty(t, spot.Legs)

	// Resting: looked at, nothing placed.
	for _, tr := range []string{"k:lim-fut", "k:lim-spot"} {
		res, err := fb.work(t, fb.queuedFollow(t, tr))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	}
	require.Empty(t, f.AlgoOrders())
	require.Empty(t, f.OrderLists())
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM order_legs`), "nothing planned before the fill")

	require.NoError(t, f.FillOrder(fut.Order.ClientOrderID))
	require.NoError(t, f.FillOrder(spot.Order.ClientOrderID))
	for _, tr := range []string{"k:lim-fut", "k:lim-spot"} {
		for range 2 { // a second delivery changes nothing
			res, err := fb.work(t, fb.queuedFollow(t, tr))
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		}
	}
	algos := f.AlgoOrders()
	require.Len(t, algos, 2, "the futures entry's two exits, placed by the follow job")
	require.Equal(t, "TAKE_PROFIT_MARKET", algos[0].Type)
	require.Equal(t, "3049.8", algos[0].TriggerPrice.String(), "2 % above the limit's fill at 2990")
	require.Equal(t, "2900", algos[1].TriggerPrice.String())
	require.Equal(t, "2", algos[0].Quantity.String())
	lists := f.OrderLists()
	require.Len(t, lists, 1, "the spot entry's one OCO list")
	require.Equal(t, "0.99", lists[0].Quantity.String(), "1 ETH bought less its 0.001 ETH fee, down to the step")
	require.Equal(t, "3100", lists[0].Above.Price.String())
	require.Equal(t, "2800", lists[0].Below.StopPrice.String())
	require.EqualValues(t, 3, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'dispatched'`))
	require.EqualValues(t, 3, count(t, b.pool, `SELECT count(*) FROM orders WHERE role <> 'primary' AND status = 'open'`))
	require.EqualValues(t, 3, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'follow'
		AND args->>'client_order_id' IN (SELECT client_order_id FROM order_legs)`), "each exit is followed from its record")

	// The sweeper finds nothing left to place.
	require.Empty(t, openLegs(t, b))
	require.Len(t, f.AlgoOrders(), 2)
	require.Len(t, f.OrderLists(), 1)
}

func openLegs(t *testing.T, b *testBundle) []string {
	t.Helper()
	rows, err := b.pool.Query(context.Background(), `SELECT client_order_id FROM order_legs WHERE outcome IS NULL`)
	require.NoError(t, err)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return ids
}
