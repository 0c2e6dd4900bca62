package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// A TradingView contracts exit repeats the entry's unrounded count: the
// entry "buy 0.0105" went out as 0.010 (qtyStep 0.001), and the exit
// "sell 0.0105" goes out as 0.010 too — it only closes the long, so no
// leverage is set: compared unrounded with the 0.010 held it "opened"
// 0.0005, set the template's leverage, and a refusal of that change
// (110013) refused the exit, leaving the position open.
func TestReducingSellWithUnroundedCountIsNotRefusedOverLeverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	entry := marketOrder("BTCUSDT", "buy", "0.0105")
	entry.Leverage = 5
	r, err := b.venue.Place(ctx, entry)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
	require.True(t, b.fake.Position("BTCUSDT").Size.Equal(d("0.01")), "held %s", b.fake.Position("BTCUSDT").Size)

	b.fake.RefuseLeverage(true)
	exit := marketOrder("BTCUSDT", "sell", "0.0105")
	exit.Leverage = 9
	r, err = b.venue.Place(ctx, exit)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, "a sell that only closes the long (0.0105 goes out as 0.010), refused over a leverage change: %s", r.Reason)
	require.True(t, b.fake.Position("BTCUSDT").Size.IsZero())
}
