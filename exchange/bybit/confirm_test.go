package bybit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// Bybit's create answer only acknowledges ("This request is asynchronous"),
// and a filled or cancelled order may be only in history (open-order
// page). Place asks realtime, then history, a few times before it answers;
// a market order comes back with its final state, or as ErrUnknownOutcome
// for the gateway to reconcile, never as open for good.
func TestPlaceConfirmsTheOrdersState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quick := func(c *bybit.Config) { c.ConfirmWait = 200 * time.Millisecond }

	for _, c := range []bybit.Market{bybit.MarketLinear, bybit.MarketSpot} {
		t.Run(string(c)+"/MarketFilledOnlyInHistory", func(t *testing.T) {
			t.Parallel()
			b := setup(t, c, quick)
			b.fake.ForgetClosedInRealtime()
			r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "60000", r.FillPrice.Decimal.String())
			require.Equal(t, 1, b.fake.Requests(bybitfake.PathHistory))
		})
	}

	t.Run("MarketNotVisibleAtFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear, quick)
		b.fake.HideFromQueries(1, 3)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, r.FillPrice.Valid)
		held, _ := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.Equal(t, held.OrderID, r.ExchangeOrderID)
	})

	t.Run("MarketNeverVisibleIsUnknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot, quick)
		b.fake.HideFromQueries(1, 1000)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
		require.NotErrorIs(t, err, exchange.ErrUnreachable)
		require.NotErrorIs(t, err, exchange.ErrNotFound)
		require.Less(t, b.fake.Requests(bybitfake.PathRealtime), 10, "a bounded number of queries")
	})

	t.Run("MarketStateUnreadableIsUnknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear, quick)
		// Every query is refused before the venue looks: still the order
		// exists, so "nothing sent" would be a lie.
		b.fake.Inject(bybitfake.PathRealtime, 1000, bybitfake.TooManyRequests(time.Minute))
		_, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
		require.NotErrorIs(t, err, exchange.ErrUnreachable)
	})

	t.Run("LimitVisibleAndOpenIsOpen", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear, quick)
		b.fake.HideFromQueries(1, 2)
		o := limitOrder("BTCUSDT", "buy", "0.01", "50000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.Equal(t, "50000", r.Price.Decimal.String())
		held, _ := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.Equal(t, held.OrderID, r.ExchangeOrderID)
	})

}
