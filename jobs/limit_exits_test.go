package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
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
	venues := binanceVenues(t, f, binance.MarketSpot, binance.MarketFutures)
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

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

// A Binance limit entry that fills in part and is then cancelled (or
// expires) at the venue gets the exits it asked for, once, for what
// filled, placed right after its follow job records the end (migration
// 00018): USDⓈ-M two algo orders of the filled quantity, the percent from
// the average fill; spot one OCO list for what the buy received net of its
// ETH fee (one entry expired, one cancelled). An entry cancelled or
// expired with nothing filled gets none.
func TestBinanceLimitEntryEndedAfterAPartialFillGetsExitsForWhatFilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.RequireFromString("0.001"))
	venues := binanceVenues(t, f, binance.MarketSpot, binance.MarketFutures)
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	place := func(body string) string {
		t.Helper()
		out, err := gw.Execute(ctx, input(t, body))
		require.NoError(t, err)
		require.Equal(t, "open", out.Order.Status)
		return out.Order.ClientOrderID
	}
	fut := place(`{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"part-fut"}`)
	spot := place(`{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3100","stop_loss":"2800","trace_id":"part-spot"}`)
	spotCancelled := place(`{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2985","take_profit":"3100","stop_loss":"2800","trace_id":"part-spot-c"}`)
	none := place(`{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2980","take_profit":"3100","stop_loss":"2900","trace_id":"part-none"}`)
	spotNone := place(`{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2980","take_profit":"3100","stop_loss":"2800","trace_id":"part-spot-none"}`)

	require.NoError(t, f.PartialFill(fut, decimal.RequireFromString("0.5")))
	require.NoError(t, f.PartialFill(spot, decimal.RequireFromString("0.4")))
	require.NoError(t, f.PartialFill(spotCancelled, decimal.RequireFromString("0.5")))
	// Partly filled and still resting: the exits wait for the end.
	for _, tr := range []string{"k:part-fut", "k:part-spot"} {
		res, err := fb.work(t, fb.queuedFollow(t, tr))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	}
	require.Empty(t, f.AlgoOrders())
	require.Empty(t, f.OrderLists())

	require.NoError(t, f.CancelOrder(fut))
	require.NoError(t, f.ExpireOrder(spot))
	require.NoError(t, f.CancelOrder(spotCancelled))
	require.NoError(t, f.CancelOrder(none))
	require.NoError(t, f.ExpireOrder(spotNone))
	for _, tr := range []string{"k:part-fut", "k:part-spot", "k:part-spot-c", "k:part-none", "k:part-spot-none"} {
		for range 2 { // a second delivery changes nothing
			res, err := fb.work(t, fb.queuedFollow(t, tr))
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		}
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'cancelled'
		AND filled_quantity = 0.5`, fut), "the entry is recorded cancelled with what filled")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'expired'
		AND filled_quantity = 0.4`, spot))

	algos := f.AlgoOrders()
	require.Len(t, algos, 2, "the futures entry's two exits, for the 0.5 that filled; none for the entry that filled nothing")
	require.Equal(t, "TAKE_PROFIT_MARKET", algos[0].Type)
	require.Equal(t, "3049.8", algos[0].TriggerPrice.String(), "2 % above the average fill at 2990")
	require.Equal(t, "0.5", algos[0].Quantity.String())
	require.Equal(t, "STOP_MARKET", algos[1].Type)
	require.Equal(t, "0.5", algos[1].Quantity.String())
	lists := f.OrderLists()
	require.Len(t, lists, 2, "one OCO list for each spot entry: the expired one and the cancelled one")
	require.Equal(t, "0.39", lists[0].Quantity.String(), "0.4 ETH bought less its 0.0004 ETH fee, down to the step")
	require.Equal(t, "0.49", lists[1].Quantity.String(), "0.5 ETH bought less its 0.0005 ETH fee, down to the step")
	require.EqualValues(t, 4, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'dispatched'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = ANY($1)`, []string{none, spotNone}),
		"nothing filled: no position, no exits")

	// The sweeper finds nothing left to place.
	require.Empty(t, openLegs(t, b))
	require.Len(t, f.AlgoOrders(), 2)
	require.Len(t, f.OrderLists(), 2)
}

// Exits a venue keeps on the limit entry itself, when the entry is
// cancelled at the venue: Bybit (linear, tpslMode Partial) keeps them on
// what filled, so they stay placed; OKX generates them only on a complete
// fill, so once its report no longer carries them the row drops them and
// the answer shows none; an entry that filled nothing shows them
// not_placed. No leg is planned for either venue.
func TestOnOrderExitsOfALimitEntryCancelledAtTheVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	by := bybitfake.New(t, bybitfake.Options{})
	ox := okxfake.New(t, okxfake.Options{})
	bv, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: bybitfake.DefaultAPIKey, APISecret: bybitfake.DefaultAPISecret, BaseURL: by.URL})
	require.NoError(t, err)
	ov, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: ox.APIKey(), APISecret: ox.APISecret(), Passphrase: ox.Passphrase(), BaseURL: ox.URL})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": bv, "okx-swap": ov})
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	place := func(venue, trace string) string {
		t.Helper()
		out, err := gw.Execute(ctx, input(t, `{"exchange":"`+venue+`","symbol":"BTCUSDT","action":"buy","quantity":"0.01",
			"order_type":"limit","price":"59000","take_profit":"62000","stop_loss":"57000","trace_id":"`+trace+`"}`))
		require.NoError(t, err)
		require.Equal(t, "open", out.Order.Status)
		require.Len(t, out.Order.Attached(), 2, "%s takes them on the order", venue)
		return out.Order.ClientOrderID
	}
	byPart, byNone, okPart := place("bybit", "oo-by"), place("bybit", "oo-by-none"), place("okx-swap", "oo-ok")
	require.True(t, by.PartialFill(bybitfake.CategoryLinear, byPart, decimal.RequireFromString("0.004")))
	require.True(t, by.CancelOrder(bybitfake.CategoryLinear, byPart))
	require.True(t, by.CancelOrder(bybitfake.CategoryLinear, byNone))
	require.NoError(t, ox.PartialFill(okPart, decimal.RequireFromString("0.4"))) // contracts: 0.004 BTC
	require.NoError(t, ox.CancelOrder(okPart))
	for _, tr := range []string{"k:oo-by", "k:oo-by-none", "k:oo-ok"} {
		res, err := fb.work(t, fb.queuedFollow(t, tr))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	status := func(id string) []string {
		t.Helper()
		row := db.OrderRow{Role: "primary"}
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT status, filled_quantity, take_profit, stop_loss FROM orders
			WHERE client_order_id = $1`, id).Scan(&row.Status, &row.FilledQuantity, &row.TakeProfit, &row.StopLoss))
		require.Equal(t, "cancelled", row.Status)
		var out []string
		for _, a := range row.Attached() {
			out = append(out, a.Role+":"+a.Status)
		}
		return out
	}
	require.Equal(t, []string{"take_profit:placed", "stop_loss:placed"}, status(byPart), "Bybit set them on the 0.004 that filled")
	require.Equal(t, []string{"take_profit:not_placed", "stop_loss:not_placed"}, status(byNone))
	require.Empty(t, status(okPart), "OKX dropped them with the entry: not shown as a protection")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM order_legs`))
}

// A Binance spot limit buy with only a stop-loss: nothing is placed while
// it rests; once the follow job records it filled, the stop goes out as
// one STOP_LOSS sell for what the buy received (1 ETH less its 0.001 ETH
// fee, down to the step), once however often the job runs.
func TestBinanceSpotLimitEntryLoneStopLossIsPlacedOnceWhenTheFollowJobRecordsTheFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.RequireFromString("0.001"))
	venues := binanceVenues(t, f, binance.MarketSpot)
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	spot, err := gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","stop_loss":"2800","trace_id":"lim-lone"}`))
	require.NoError(t, err)
	require.Equal(t, "open", spot.Order.Status)
	res, err := fb.work(t, fb.queuedFollow(t, "k:lim-lone"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.Len(t, f.Orders(), 1, "nothing but the resting entry")

	require.NoError(t, f.FillOrder(spot.Order.ClientOrderID))
	for range 2 { // a second delivery changes nothing
		res, err := fb.work(t, fb.queuedFollow(t, "k:lim-lone"))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	held := f.Orders()
	require.Len(t, held, 2, "the entry and one stop")
	require.Equal(t, "STOP_LOSS", held[1].Type)
	require.Equal(t, "2800", held[1].StopPrice.String())
	require.Equal(t, "0.99", held[1].Quantity.String())
	require.Empty(t, f.OrderLists())
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'stop_loss' AND status = 'open'`))
	require.Empty(t, openLegs(t, b))
}

// A lone spot exit whose answer is lost follows the leg protocol: booked
// with the answer lost (-1007), the next pass looks it up by its client
// order ID and adopts it; lost with nothing booked, it ends failed once
// its accept window has passed and is never sent again — Binance spot may
// still book a late request, and here it does, an hour later: one stop in
// all, never two selling the same coins.
func TestBinanceSpotLoneExitWithALostAnswerIsAdoptedOrFailedNeverSentTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(100_000)}})
	venues := binanceVenues(t, f, binance.MarketSpot)
	fb := followOn(t, b, venues, nil)
	gw := fb.gw
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)
	stopPlacements := func() int {
		n := 0
		for _, o := range f.Orders() {
			if o.Type == "STOP_LOSS" {
				n++
			}
		}
		return n
	}
	// entry rests a limit buy with a lone stop, queues fault for the
	// stop's placement, fills the buy and lets the follow job record it
	// (which sends the stop); it returns the leg's lock key and parent.
	entry := func(trace string, fault binancefake.Fault) (string, string) {
		t.Helper()
		out, err := gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
			"order_type":"limit","price":"2990","stop_loss":"2800","trace_id":"`+trace+`"}`))
		require.NoError(t, err)
		f.Inject(fault)
		require.NoError(t, f.FillOrder(out.Order.ClientOrderID))
		res, err := fb.work(t, fb.queuedFollow(t, "k:"+trace))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
		var lockKey, parent string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id FROM order_legs WHERE trace_id = $1`, "k:"+trace).Scan(&lockKey, &parent))
		require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:`+trace+`' AND sent_at IS NOT NULL AND outcome IS NULL`),
			"sent, fate unknown")
		return lockKey, parent
	}
	age := func(trace string) {
		_, err := b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = $1`, "k:"+trace)
		require.NoError(t, err)
	}

	lockKey, parent := entry("lost-booked", binancefake.Fault{Kind: binancefake.FaultUnknownAfterAccept})
	require.Equal(t, 1, stopPlacements(), "Binance booked the stop")
	_, err := runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:lost-booked' AND event = 'leg_placed' AND detail->>'adopted' = 'true'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:lost-booked' AND role = 'stop_loss' AND status = 'open'`))
	require.Equal(t, 1, stopPlacements(), "adopted, not sent again")

	lockKey, parent = entry("lost-late", binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	_, err = runner.Finish(ctx, lockKey, parent)
	require.ErrorIs(t, err, jobs.ErrNotYet, "inside the accept window the stop may still appear")
	age("lost-late")
	_, err = runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:lost-late' AND outcome = 'failed'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:lost-late' AND event = 'leg_failed'`))
	f.Advance(2 * time.Hour)
	require.Equal(t, 2, stopPlacements(), "the late request was booked after all: one stop for each entry, never a second for one")
}

// An okx-swap limit long with a stop-loss (on the entry: attachAlgoOrds)
// and a 1.5 % trailing stop (a leg) rests; the trailing stop is placed
// once, right after the follow job records the entry filled — not before,
// not again on a second delivery — as one reduce-only move_order_stop for
// what filled.
func TestOKXLimitEntryTrailingStopIsPlacedOnceWhenTheFollowJobRecordsTheFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := okxfake.New(t, okxfake.Options{}) // BTCUSDT at 60000
	v, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: f.APIKey(), APISecret: f.APISecret(), Passphrase: f.Passphrase(), BaseURL: f.URL})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"okx-swap": v})
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	entry, err := gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.05",
		"order_type":"limit","price":"59000","stop_loss":"57000","trailing_stop":{"percent":1.5},"trace_id":"okx-lim"}`))
	require.NoError(t, err)
	require.Equal(t, "open", entry.Order.Status)
	require.Empty(t, entry.Legs)

	res, err := fb.work(t, fb.queuedFollow(t, "k:okx-lim"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "resting: looked at, nothing placed")
	require.Empty(t, f.TrailingStops())

	require.NoError(t, f.FillOrder(entry.Order.ClientOrderID))
	for range 2 { // a second delivery changes nothing
		res, err := fb.work(t, fb.queuedFollow(t, "k:okx-lim"))
		require.NoError(t, err)
		require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	}
	algos := f.TrailingStops()
	require.Len(t, algos, 1, "one trailing stop, placed by the follow job")
	require.Equal(t, "move_order_stop", algos[0].OrdType)
	require.Equal(t, "0.015", algos[0].CallbackRatio.String())
	require.Equal(t, "5", algos[0].Sz.String(), "0.05 BTC filled: 5 contracts")
	require.Equal(t, "57000", f.Orders()[0].SlTriggerPx.String(), "the stop-loss stays on the entry")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'open' AND callback_rate = 1.5`))
	require.Empty(t, openLegs(t, b), "the sweeper finds nothing left to place")
}
