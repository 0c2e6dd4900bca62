package bybit_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

func price(s string) *exchange.Attached {
	return &exchange.Attached{Price: decimal.NewNullDecimal(d(s))}
}

func TestPlaceWithTakeProfitAndStopLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("LinearMarketBuyCarriesThemRoundedTowardTheEntry", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		// Tick 0.10: the take-profit rounds down, the stop-loss up.
		o.TakeProfit, o.StopLoss = price("61200.07"), price("58800.01")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "61200", r.TakeProfit.Decimal.String())
		require.Equal(t, "58800.1", r.StopLoss.Decimal.String())

		held, ok := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.True(t, ok)
		require.Equal(t, "61200", held.TakeProfit.String())
		require.Equal(t, "58800.1", held.StopLoss.String())
		require.Equal(t, "Partial", held.TpslMode, "this entry's exits cover what it filled, never replace another entry's")
		require.Equal(t, "LastPrice", held.TpTriggerBy)

		// The lookup of the same order adopts it, exits included.
		got, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, r.TakeProfit, got.TakeProfit)
	})

	t.Run("LookupReportsTheExitsBybitHolds", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.StopLoss = price("58000")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)

		// Exits changed at Bybit (amend, the app) leave the order this
		// signal's: the lookup reports what Bybit holds.
		for _, asked := range []func(exchange.Order) exchange.Order{
			func(x exchange.Order) exchange.Order { x.StopLoss = price("57000"); return x },
			func(x exchange.Order) exchange.Order { x.StopLoss = nil; return x },
			func(x exchange.Order) exchange.Order { x.TakeProfit = price("65000"); return x },
		} {
			got, err := b.venue.Lookup(ctx, asked(o))
			require.NoError(t, err)
			require.Equal(t, "58000", got.StopLoss.Decimal.String())
			require.False(t, got.TakeProfit.Valid)
		}
	})

	t.Run("WrongSideIsRejectedByBybit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		// Last price 60000: a buy's take-profit at 59000 would fire at once.
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.TakeProfit = price("59000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "should be higher than base_price")
		_, found := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.False(t, found, "nothing was booked")
	})

	t.Run("UnresolvedPercentIsNeverSent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.StopLoss = &exchange.Attached{Percent: decimal.NewNullDecimal(d("2"))}
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "not resolved")
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})

	// Bybit takes TP/SL on a spot limit order, but the orders it places
	// once the entry filled sell coins hoox's spot ledger never hears
	// of: refused, nothing sent.
	t.Run("SpotLimitRefusesThem", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		o := limitOrder("BTCUSDT", "buy", "0.01", "59000")
		o.TakeProfit, o.StopLoss = price("61000"), price("58000")
		require.Equal(t, bybit.ReasonSpotTPSL, b.venue.RefuseAttachments(o))
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, bybit.ReasonSpotTPSL, r.Reason)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})
}

func TestRefuseAttachments(t *testing.T) {
	t.Parallel()

	linear := setup(t, bybit.MarketLinear).venue
	spot := setup(t, bybit.MarketSpot).venue
	market := marketOrder("BTCUSDT", "buy", "0.01")
	market.StopLoss = price("58000")
	require.Empty(t, linear.RefuseAttachments(market))
	require.Equal(t, bybit.ReasonSpotTPSL, spot.RefuseAttachments(market), "spot takes no TP/SL")

	trailing := marketOrder("BTCUSDT", "buy", "0.01")
	trailing.TrailingStop = &exchange.Attached{Percent: decimal.NewNullDecimal(d("1"))}
	require.Empty(t, linear.RefuseAttachments(trailing), "linear sets it on the position, as a leg")
	require.Equal(t, bybit.ReasonTrailingStop, spot.RefuseAttachments(trailing), "trading-stop takes no spot")
	trailing.StopLoss = price("58000")
	require.Equal(t, bybit.ReasonTrailingWithTPSL, linear.RefuseAttachments(trailing))
}
