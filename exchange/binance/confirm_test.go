package binance_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// A market order Binance answers NEW or PARTIALLY_FILLED is not final: the
// matching engine had not finished with it. Place follows it for a bounded
// time and answers its final state, or ErrUnknownOutcome for the gateway
// to reconcile — never an open market order that nobody looks at again.
func TestPlaceConfirmsAMarketOrderNotYetFinal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quick := func(c *binance.Config) { c.ConfirmWait = 200 * time.Millisecond }

	for _, m := range markets {
		t.Run(string(m)+"/FinalWhilePlaceAsks", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m, quick)
			b.fake.HoldMarketOrders(1, 2)
			o := marketOrder("buy", "0.01")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "0.01", r.FilledQuantity.String())
			require.Equal(t, "50000", r.FillPrice.Decimal.String())
			held := b.fake.Orders()
			require.Len(t, held, 1)
			require.Equal(t, held[0].OrderID, mustInt(t, r.ExchangeOrderID))
		})

		t.Run(string(m)+"/NeverFinalIsUnknown", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m, quick)
			b.fake.HoldMarketOrders(1, 0)
			o := marketOrder("buy", "0.01")
			_, err := b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
			require.NotErrorIs(t, err, exchange.ErrUnreachable)
			require.Less(t, b.fake.Requests(b.path), 10, "a bounded number of queries")

			// The reconcile keeps following it: open while not final,
			// filled once Binance fills it.
			r, err := b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.NoError(t, b.fake.FillOrder(o.ClientOrderID))
			r, err = b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "50000", r.FillPrice.Decimal.String())
			require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
		})
	}

	t.Run("LimitOpenIsAnsweredAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot, quick)
		b.fake.HoldMarketOrders(1, 0) // holds market orders only
		o := limitOrder("buy", "0.01", "40000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.Len(t, b.fake.RequestLog(b.path), 1, "no query after the placement")
	})
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}
