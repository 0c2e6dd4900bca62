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

// instruments-info "By default returns only Trading symbols" (market/
// instrument.mdx, request parameter status; "Spot has Trading only"): once a
// symbol leaves Trading (a linear contract Delivering or Closed at a
// delisting, a spot pair suspended), the adapter's filters read finds no
// instrument. Lookup then compared the order Bybit holds (its quantity
// rounded down to qtyStep when it was sent) with the signal's unrounded
// quantity and answered ErrMismatch — "another signal's order" — for hoox's
// own order: the reconcile recorded the key reused, the follow job never
// recorded the fill. The fake's RemoveInstrument models the documented
// default filter (the symbol is no longer listed).
func TestLookupKnowsItsRoundedOrderAfterTheSymbolLeftTrading(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		qty := "0.0015" // linear step 0.001: sent as 0.001
		if c == bybit.MarketSpot {
			qty = "0.0010005" // spot basePrecision 0.000001: sent as 0.001
		}
		o := limitOrder("BTCUSDT", "buy", qty, "50000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.Equal(t, "0.001", r.Quantity.String())

		// It fills; later the symbol leaves Trading and instruments-info
		// no longer lists it.
		require.True(t, b.fake.PartialFill(string(c), o.ClientOrderID, d("0.001")))
		b.clock.Advance(10 * time.Minute)
		b.fake.RemoveInstrument(string(c), "BTCUSDT")
		b.clock.Advance(2 * time.Hour) // past FilterTTL

		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err, "the order under hoox's own orderLinkId is this signal's order")
		require.Equal(t, exchange.StatusFilled, r.Status)

		// A quantity the held order is no rounding of is still another
		// signal's, listed or not.
		other := o
		other.Quantity = d("0.0025")
		_, err = b.venue.Lookup(ctx, other)
		require.ErrorIs(t, err, exchange.ErrMismatch)
	})

	// A contract delisted: Bybit keeps it as Closed, which instruments-info
	// lists only when asked for that status.
	t.Run("ClosedContract", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := limitOrder("BTCUSDT", "buy", "0.0015", "50000")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.True(t, b.fake.PartialFill(bybitfake.CategoryLinear, o.ClientOrderID, d("0.001")))
		b.fake.SetInstrument(bybitfake.CategoryLinear, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
			TickSize: d("0.10"), QtyStep: d("0.001"), MinOrderQty: d("0.001"), MinNotional: d("5"), Status: "Closed"})
		b.clock.Advance(2 * time.Hour)

		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		// A new order is refused before it is sent.
		r, err = b.venue.Place(ctx, limitOrder("BTCUSDT", "buy", "0.001", "50000"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathCreate), "nothing sent for a symbol that is not listed")
	})

	// A step of a hundred contracts (low-priced linear contracts): 1234 is
	// sent as 1200, and 1200 is still this order once the contract is no
	// longer listed.
	t.Run("StepAboveOne", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetInstrument(bybitfake.CategoryLinear, bybitfake.Instrument{Symbol: "1000PEPEUSDT", BaseCoin: "1000PEPE", QuoteCoin: "USDT",
			TickSize: d("0.0000001"), QtyStep: d("100"), MinOrderQty: d("100"), MinNotional: d("5")})
		b.fake.SetTicker(bybitfake.CategoryLinear, "1000PEPEUSDT", d("0.01"))
		o := marketOrder("1000PEPEUSDT", "buy", "1234")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
		require.Equal(t, "1200", r.Quantity.String())

		b.fake.RemoveInstrument(bybitfake.CategoryLinear, "1000PEPEUSDT")
		b.clock.Advance(2 * time.Hour)
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}
