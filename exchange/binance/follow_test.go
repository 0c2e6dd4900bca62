package binance_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// A resting limit order is followed: a partial fill shows as open with what
// executed, its average price and (from the trade list) its fee; a cancel
// ends it cancelled with the partial fill kept, and a second cancel — which
// Binance answers -2011 "Unknown order sent." — reports it as it is.
func TestFollowAndCancelALimitOrder(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := limitOrder("buy", "0.01", "40000")
		placed, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, placed.Status)

		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.004")))
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.True(t, d("0.004").Equal(r.FilledQuantity))
		require.True(t, d("40000").Equal(r.AvgPrice.Decimal))
		require.True(t, r.Fee.IsZero(), "the order query carries no fee")

		r, err = b.venue.Fees(ctx, o, r)
		require.NoError(t, err)
		if m == binance.MarketFutures {
			require.Equal(t, "USDT", r.FeeAsset)
			require.True(t, d("0.064").Equal(r.Fee), "0.04%% of 160 USDT: %s", r.Fee) // 0.004 × 40000 × 0.0004
		} else {
			require.Equal(t, "BTC", r.FeeAsset, "spot charges the asset received")
			require.True(t, d("0.000004").Equal(r.Fee), "0.1%% of 0.004 BTC: %s", r.Fee)
		}

		r, err = b.venue.Cancel(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusCancelled, r.Status)
		require.True(t, d("0.004").Equal(r.FilledQuantity), "what filled before the cancel is kept")

		again, err := b.venue.Cancel(ctx, o)
		require.NoError(t, err, "cancelling a cancelled order is not an error")
		require.Equal(t, exchange.StatusCancelled, again.Status)

		missing := limitOrder("buy", "0.01", "40000")
		_, err = b.venue.Cancel(ctx, missing)
		require.ErrorIs(t, err, exchange.ErrNotFound)
	})
}

// A filled order cannot be cancelled: the fake refuses it -2011 as Binance
// does, and Cancel reports the fill.
func TestCancelAFilledOrderReportsTheFill(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := limitOrder("buy", "0.01", "45000")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.NoError(t, b.fake.FillOrder(o.ClientOrderID))
		r, err := b.venue.Cancel(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, d("45000").Equal(r.AvgPrice.Decimal))
		log := b.fake.RequestLog(b.path)
		require.NotEmpty(t, log)
		require.Equal(t, "DELETE", log[len(log)-2].Method, "the cancel was sent, refused, then the order looked up")
	})
}

// Expired by the venue: a limit order ends expired.
func TestExpiredLimitOrder(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := limitOrder("buy", "0.01", "40000")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.NoError(t, b.fake.ExpireOrder(o.ClientOrderID))
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusExpired, r.Status)
	})
}

// A USDⓈ-M exit (a take-profit or stop-loss leg, an algo order under its
// clientAlgoId) is cancelled through DELETE /fapi/v1/algoOrder, not the
// plain cancel (which knows no such order): reported cancelled, and the
// venue holds it CANCELED. A second cancel — refused -2011 — looks it up
// and reports it cancelled again; an exit never placed is ErrNotFound.
func TestCancelAFuturesExitCancelsTheAlgoOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	exit := func(role, trigger string) exchange.Order {
		o := exchange.Order{ClientOrderID: newID(), Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
			OrderType: "market", Quantity: d("0.01"), Exit: role}
		a := &exchange.Attached{Price: decimal.NewNullDecimal(d(trigger))}
		if role == exchange.RoleTakeProfit {
			o.TakeProfit = a
		} else {
			o.StopLoss = a
		}
		return o
	}
	tp, sl := exit(exchange.RoleTakeProfit, "55000"), exit(exchange.RoleStopLoss, "45000")
	for _, o := range []exchange.Order{tp, sl} {
		placed, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, placed.Status)
	}

	r, err := b.venue.Cancel(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, r.Status)
	require.Equal(t, "55000", r.TakeProfit.Decimal.String())
	require.NotEmpty(t, r.ExchangeOrderID)
	require.Zero(t, b.fake.Requests("/fapi/v1/order"), "nothing sent to the plain order endpoint")

	again, err := b.venue.Cancel(ctx, tp)
	require.NoError(t, err, "cancelling a cancelled exit is not an error")
	require.Equal(t, exchange.StatusCancelled, again.Status)
	require.Equal(t, r.ExchangeOrderID, again.ExchangeOrderID)
	looked, err := b.venue.Lookup(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, looked.Status)

	held := map[string]string{}
	for _, a := range b.fake.AlgoOrders() {
		held[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, map[string]string{tp.ClientOrderID: "CANCELED", sl.ClientOrderID: "NEW"}, held, "only the take-profit is cancelled")

	_, err = b.venue.Cancel(ctx, exit(exchange.RoleStopLoss, "45000"))
	require.ErrorIs(t, err, exchange.ErrNotFound)
}

// requireFeeOfEveryExecution reads o's fee once it filled and requires it
// to be what all of its executions on the fake were charged, which it
// returns.
func requireFeeOfEveryExecution(t *testing.T, b *testBundle, o exchange.Order, executions int) decimal.Decimal {
	t.Helper()
	ctx := t.Context()
	r, err := b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
	r, err = b.venue.Fees(ctx, o, r)
	require.NoError(t, err)

	trades := b.fake.Trades(o.ClientOrderID)
	require.Len(t, trades, executions)
	want, qty := decimal.Zero, decimal.Zero
	for _, tr := range trades {
		want, qty = want.Add(tr.Commission), qty.Add(tr.Qty)
	}
	require.True(t, qty.Equal(r.FilledQuantity))
	require.Equal(t, trades[0].CommissionAsset, r.FeeAsset)
	require.True(t, want.Equal(r.Fee), "the order's fee is what its %d executions were charged, %s, not %s", executions, want, r.Fee)
	return r.Fee
}

// USDⓈ-M reads the last 7 days of trades when neither startTime nor
// endTime is sent (Account-Trade-List.md): a limit order that executed
// part of itself more than 7 days before the follow job reads its fees (a
// resting entry filled over days; the follow job follows it as long as
// its trace is kept, 90 days by default) still has the fee of every
// execution recorded.
func TestFuturesFeesCoverExecutionsOlderThanSevenDays(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	o := limitOrder("buy", "0.02", "40000")
	placed, err := b.venue.Place(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status)

	require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.01")))
	b.clock.Advance(8 * 24 * time.Hour)
	require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.01")))

	fee := requireFeeOfEveryExecution(t, b, o, 2)
	require.True(t, d("0.32").Equal(fee), "0.04%% of 800 USDT: %s", fee) // 0.02 × 40000 × 0.0004
}

// A page of the trade list holds 500 trades by default, 1000 at most, and
// a USDⓈ-M time span cannot be paged with fromId: an order with more
// executions than a page — a thousand in one millisecond now, as a large
// market order can take, and a thousand spread over a day more than a
// week ago — still has the fee of every one recorded.
func TestFuturesFeesCoverMoreExecutionsThanAPage(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketFutures)
	o := limitOrder("buy", "2.002", "40000")
	placed, err := b.venue.Place(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status)

	for range 1001 {
		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.001")))
		b.clock.Advance(time.Minute)
	}
	b.clock.Advance(8 * 24 * time.Hour)
	for range 1001 {
		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.001")))
	}

	requireFeeOfEveryExecution(t, b, o, 2002)
}

// A spot limit buy taken by many small orders has more executions than a
// page of the trade list holds (500 by default, 1000 at most): its fee,
// charged in the coin bought, is counted for every one of them, since the
// spot ledger counts the fill net of it — a fee counted short would credit
// the strategy with coins Binance took as commission, and a later close
// would sell other strategies' coins.
func TestSpotFeesCoverMoreExecutionsThanAPage(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot)
	b.fake.SetBalance("USDT", d("1000000"))
	o := limitOrder("buy", "1.001", "40000")
	placed, err := b.venue.Place(t.Context(), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status)
	for range 1001 {
		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.001")))
	}

	requireFeeOfEveryExecution(t, b, o, 1001)
}
