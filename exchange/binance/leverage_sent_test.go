package binance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// As on Bybit: the long holds 0.010 (the entry's 0.0105 rounded down to the
// 0.001 step); the exit "sell 0.0105" goes out as 0.010 and only closes
// it, so no leverage is set (counted unrounded, it was, and Binance refusing
// the change, -2027 / -4161, refused the exit and left the position open).
func TestFuturesReducingSellWithUnroundedCountIsNotRefusedOverLeverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.010"))
	b.fake.RefuseLeverage(true)
	exit := marketOrder("sell", "0.0105")
	exit.Leverage = 9
	r, err := b.venue.Place(ctx, exit)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, "a sell that only closes the long (0.0105 goes out as 0.010), refused over a leverage change: %s", r.Reason)
	require.True(t, b.fake.Position("BTCUSDT").IsZero(), "position %s", b.fake.Position("BTCUSDT"))
}
