package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// A resting limit order is followed: a partial fill shows as open with
// what executed, its average price and its fee (cumFeeDetail); a cancel
// ends it cancelled with the partial fill kept; a second cancel — which
// Bybit refuses "Order does not exist" — reports it as it is.
func TestFollowAndCancelALimitOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		market   bybit.Market
		category string
		feeCoin  string
		fee      string
	}{
		{bybit.MarketLinear, bybitfake.CategoryLinear, "USDT", "0.1298"}, // 0.004 × 59000 × 0.00055
		{bybit.MarketSpot, bybitfake.CategorySpot, "BTC", "0.000004"},    // 0.1% of the BTC received
	} {
		t.Run(string(c.market), func(t *testing.T) {
			t.Parallel()
			b := setup(t, c.market)
			o := limitOrder("BTCUSDT", "buy", "0.01", "59000")
			placed, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, placed.Status)

			require.True(t, b.fake.PartialFill(c.category, o.ClientOrderID, d("0.004")))
			r, err := b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.Equal(t, "0.004", r.FilledQuantity.String())
			require.Equal(t, "59000", r.AvgPrice.Decimal.String())
			require.Equal(t, c.feeCoin, r.FeeAsset)
			require.True(t, d(c.fee).Equal(r.Fee), "fee %s", r.Fee)

			r, err = b.venue.Cancel(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusCancelled, r.Status)
			require.Equal(t, "0.004", r.FilledQuantity.String(), "what filled before the cancel is kept")

			again, err := b.venue.Cancel(ctx, o)
			require.NoError(t, err, "cancelling a cancelled order is not an error")
			require.Equal(t, exchange.StatusCancelled, again.Status)
			require.Equal(t, 2, b.fake.Requests(bybitfake.PathCancel), "both cancels were sent")

			_, err = b.venue.Cancel(ctx, limitOrder("BTCUSDT", "buy", "0.01", "59000"))
			require.ErrorIs(t, err, exchange.ErrNotFound)
		})
	}
}
