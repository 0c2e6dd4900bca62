package binance_test

import (
	"context"
	"testing"

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
