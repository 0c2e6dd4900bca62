package binance_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// A trailing stop exit goes to the Algo Order API as TRAILING_STOP_MARKET
// with the percent as callbackRate, rounded down to one decimal; a lookup
// by its client ID adopts it only when the rate it holds is the one hoox
// would send — a different rate under the same ID is a mismatch, never
// recorded as this exit. A cancel reaches it through the algo endpoint.
func TestTrailingStopExitIsPlacedLookedUpAndCancelledByItsRate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	exit := func(id, percent string) exchange.Order {
		return exchange.Order{ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
			OrderType: "market", Quantity: d("0.01"), Exit: exchange.RoleTrailingStop,
			TrailingStop: &exchange.Attached{Percent: decimal.NewNullDecimal(d(percent))}}
	}
	ts := exit(newID(), "2.37")
	placed, err := b.venue.Place(ctx, ts)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, placed.Status, placed.Reason)
	require.Equal(t, "2.3", placed.CallbackRate.Decimal.String())
	held := b.fake.AlgoOrders()
	require.Len(t, held, 1)
	require.Equal(t, "TRAILING_STOP_MARKET", held[0].Type)
	require.Equal(t, "2.3", held[0].CallbackRate.String())
	require.True(t, held[0].ReduceOnly)
	require.Zero(t, b.fake.Requests("/fapi/v1/order"), "nothing sent to the plain order endpoint")

	looked, err := b.venue.Lookup(ctx, ts)
	require.NoError(t, err)
	require.Equal(t, placed.ExchangeOrderID, looked.ExchangeOrderID)
	require.Equal(t, "2.3", looked.CallbackRate.Decimal.String())

	other := exit(ts.ClientOrderID, "1")
	_, err = b.venue.Lookup(ctx, other)
	require.ErrorIs(t, err, exchange.ErrMismatch, "a trailing stop held at another rate is not this exit")

	r, err := b.venue.Cancel(ctx, ts)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, r.Status)
	require.Equal(t, "2.3", r.CallbackRate.Decimal.String())
	require.Equal(t, "CANCELED", b.fake.AlgoOrders()[0].Status)

	// A rate Binance cannot take is refused before it is sent.
	require.Equal(t, binance.ReasonTrailingDistance, b.venue.RefuseAttachments(exchange.Order{OrderType: "market", Action: "buy",
		TrailingStop: &exchange.Attached{Distance: decimal.NewNullDecimal(d("30"))}}))
	require.Contains(t, b.venue.RefuseAttachments(exchange.Order{OrderType: "market", Action: "buy",
		TrailingStop: &exchange.Attached{Percent: decimal.NewNullDecimal(d("0.09"))}}), "callbackRate range 0.1 to 10")
	require.Empty(t, b.venue.RefuseAttachments(exchange.Order{OrderType: "market", Action: "buy",
		TrailingStop: &exchange.Attached{Percent: decimal.NewNullDecimal(d("10"))}}))
}
