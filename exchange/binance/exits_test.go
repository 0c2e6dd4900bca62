package binance_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// A USDⓈ-M exit is looked up through its algo order and, once triggered,
// through the order it became (actualOrderId): TRIGGERED with that order
// still working is open; once it filled (FINISHED) the exit is filled
// with that order's quantity and price, and its fee comes from that
// order's trades — not from the algo ID, which has none. A stop whose
// trigger finds no position (CANCELED, "Reduce Only reject") is cancelled.
func TestFuturesExitIsResolvedThroughTheOrderItTriggered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.01"))
	exit := func(role string, trigger string) exchange.Order {
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
	tp, sl := exit(exchange.RoleTakeProfit, "51000"), exit(exchange.RoleStopLoss, "49000")
	for _, o := range []exchange.Order{tp, sl} {
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	}

	b.fake.HoldMarketOrders(1, 0)
	b.fake.MovePrice("BTCUSDT", d("51200"))
	r, err := b.venue.Lookup(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, "TRIGGERED: its market order is still working")
	require.True(t, r.FilledQuantity.IsZero())

	algoID, err := strconv.ParseInt(r.ExchangeOrderID, 10, 64)
	require.NoError(t, err)
	require.NoError(t, b.fake.FillOrder(binancefake.TriggeredOrderID(algoID)))
	r, err = b.venue.Lookup(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, "FINISHED: its order filled")
	require.Equal(t, "0.01", r.FilledQuantity.String())
	require.Equal(t, "51200", r.AvgPrice.Decimal.String(), "the price it executed at, not the trigger")
	require.Equal(t, r.ExchangeOrderID, strconv.FormatInt(algoID, 10), "the exit is still known by its algo ID")
	require.NotEmpty(t, r.FillOrderID)
	withFee, err := b.venue.Fees(ctx, tp, r)
	require.NoError(t, err)
	require.Equal(t, "USDT", withFee.FeeAsset)
	require.Equal(t, "0.2048", withFee.Fee.String(), "0.04 % of 512 USDT, from the triggered order's trades")

	b.fake.MovePrice("BTCUSDT", d("48000"))
	r, err = b.venue.Lookup(ctx, sl)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, r.Status, "the stop found no position to reduce")
	require.True(t, r.FilledQuantity.IsZero())
}
