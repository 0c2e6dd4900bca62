package bybit_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

func TestFiltersRejectBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name     string
		category bybit.Market
		order    func() exchange.Order
		prepare  func(*bybitfake.Server)
		reason   string
	}{
		{"LinearBelowMinQty", bybit.MarketLinear,
			func() exchange.Order { return marketOrder("BTCUSDT", "buy", "0.0009") }, nil, bybit.ReasonBelowMinQty},
		{"LinearMarketBelowMinNotionalAtTicker", bybit.MarketLinear,
			func() exchange.Order { return marketOrder("BTCUSDT", "buy", "0.001") },
			func(f *bybitfake.Server) { f.SetTicker(bybitfake.CategoryLinear, "BTCUSDT", d("4000")) },
			bybit.ReasonBelowMinNotional},
		{"LinearMarketBelowMinNotionalAtSignalPrice", bybit.MarketLinear,
			func() exchange.Order {
				o := marketOrder("BTCUSDT", "buy", "0.001")
				o.Price = decimal.NewNullDecimal(d("4000"))
				return o
			}, nil, bybit.ReasonBelowMinNotional},
		{"LinearLimitBelowMinNotional", bybit.MarketLinear,
			func() exchange.Order { return limitOrder("ETHUSDT", "buy", "0.01", "400") }, nil, bybit.ReasonBelowMinNotional},
		{"SpotRoundsToZero", bybit.MarketSpot,
			func() exchange.Order { return marketOrder("BTCUSDT", "sell", "0.0000009") }, nil, bybit.ReasonBelowMinQty},
		{"SpotBelowMinOrderAmt", bybit.MarketSpot,
			func() exchange.Order { return limitOrder("BTCUSDT", "buy", "0.00008", "60000") }, nil, bybit.ReasonBelowMinNotional},
		{"LimitWithoutPrice", bybit.MarketLinear,
			func() exchange.Order {
				o := marketOrder("BTCUSDT", "buy", "0.01")
				o.OrderType = "limit"
				return o
			}, nil, bybit.ReasonLimitWithoutPrice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.category)
			if tt.prepare != nil {
				tt.prepare(b.fake)
			}
			r, err := b.venue.Place(ctx, tt.order())
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Contains(t, r.Reason, tt.reason)
			require.Zero(t, b.fake.Requests(bybitfake.PathCreate), "nothing is sent")
		})
	}

	t.Run("TickerOnlyWhenNoPriceIsKnown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Price = decimal.NewNullDecimal(d("60000"))
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Zero(t, b.fake.Requests(bybitfake.PathTickers))
		_, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathTickers))
	})
}

func TestFilterRefresh(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("AfterAFilterFailure", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		_, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.015"))
		require.NoError(t, err)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathInstruments))

		// Bybit coarsens the step; the cached filters still allow 0.015.
		b.fake.SetInstrument(bybitfake.CategoryLinear, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
			TickSize: d("0.1"), QtyStep: d("0.01"), MinOrderQty: d("0.01"), MinNotional: d("5")})
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.015"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "params error: qty precision invalid", r.Reason)

		// The failure dropped the cache: the next order uses the new step.
		r, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.015"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "0.01", r.Quantity.String())
		require.Equal(t, 2, b.fake.Requests(bybitfake.PathInstruments))
	})

	t.Run("SpotMinAmountRaised", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		_, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.0002"))
		require.NoError(t, err)
		b.fake.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
			TickSize: d("0.1"), QtyStep: d("0.000001"), MinNotional: d("20")})
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.0002"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "Order value exceeded lower limit", r.Reason)
		sent := b.fake.Requests(bybitfake.PathCreate)
		r, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.0002"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, bybit.ReasonBelowMinNotional)
		require.Equal(t, sent, b.fake.Requests(bybitfake.PathCreate), "refused before sending now")
	})

	t.Run("Hourly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		_, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		b.clock.Advance(59 * time.Minute)
		_, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathInstruments))
		b.clock.Advance(time.Minute)
		_, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 2, b.fake.Requests(bybitfake.PathInstruments))
	})
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("LinearCloseLongSellsThePositionReduceOnly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetPosition("BTCUSDT", "Buy", d("0.5"))
		o := resolveClose("BTCUSDT.P", "close_long")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "sell", r.Side)
		require.Equal(t, "0.5", r.Quantity.String())
		held, _ := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.True(t, held.ReduceOnly)
		require.Equal(t, "Market", held.OrderType)
		require.True(t, b.fake.Position("BTCUSDT").Size.IsZero())

		// The close's lookup matches although the signal's quantity and
		// side differ from what was sent.
		_, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
	})

	t.Run("LinearCloseBuysBackAShort", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetPosition("ETHUSDT", "Sell", d("1.25"))
		r, err := b.venue.Place(ctx, resolveClose("ETHUSDT", "close"))
		require.NoError(t, err)
		require.Equal(t, "buy", r.Side)
		require.Equal(t, "1.25", r.Quantity.String())
		require.True(t, b.fake.Position("ETHUSDT").Size.IsZero())
	})

	// Whether Bybit's minimum notional applies to a reduce-only order is
	// not in its docs; refusing one here could leave a small position
	// hoox can never close, so the close is sent and Bybit decides (this
	// fake applies the minimum to every order).
	t.Run("LinearSmallCloseIsLeftToBybit", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetPosition("BTCUSDT", "Buy", d("0.001"))
		b.fake.SetTicker(bybitfake.CategoryLinear, "BTCUSDT", d("1000"))
		r, err := b.venue.Place(ctx, resolveClose("BTCUSDT", "close_long"))
		require.NoError(t, err)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathCreate), "the close was sent")
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.NotContains(t, r.Reason, bybit.ReasonBelowMinNotional, "refused by Bybit, not by hoox")
	})

	t.Run("LinearNoPositionInThatDirection", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		for _, action := range []string{"close", "close_long", "close_short"} {
			r, err := b.venue.Place(ctx, resolveClose("BTCUSDT", action))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Equal(t, bybit.ReasonNoPosition, r.Reason)
		}
		b.fake.SetPosition("BTCUSDT", "Buy", d("0.5"))
		r, err := b.venue.Place(ctx, resolveClose("BTCUSDT", "close_short"))
		require.NoError(t, err)
		require.Equal(t, bybit.ReasonNoPosition, r.Reason)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})

	t.Run("LinearVenueRefusesReduceOnlyWhenPositionVanished", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		// A plain reduce-only sell with nothing to reduce: Bybit's 110017.
		o := marketOrder("BTCUSDT", "sell", "0.01")
		o.ReduceOnly = true
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "current position is zero")
	})

	t.Run("SpotSellsTheFreeBaseBalanceRoundedDown", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		b.fake.SetBalance("BTC", d("0.0123456789"))
		// A resting sell locks part of it.
		_, err := b.venue.Place(ctx, limitOrder("BTCUSDT", "sell", "0.002", "70000"))
		require.NoError(t, err)
		o := resolveClose("BYBIT:BTCUSDT", "close_long")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "sell", r.Side)
		require.Equal(t, "0.010345", r.Quantity.String())
		bal := b.fake.Balance("BTC")
		require.Equal(t, "0.0020006789", bal.WalletBalance.String())
		require.Equal(t, "0.002", bal.Locked.String())
	})

	t.Run("SpotNothingToSellAndCloseShort", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		r, err := b.venue.Place(ctx, resolveClose("BTCUSDT", "close"))
		require.NoError(t, err)
		require.Equal(t, bybit.ReasonNoPosition, r.Reason)
		b.fake.SetBalance("BTC", d("1"))
		r, err = b.venue.Place(ctx, resolveClose("BTCUSDT", "close_short"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, bybit.ReasonSpotCloseShort, r.Reason)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})
}

// A short signal on spot is refused before anything is sent: spot cannot
// open a short, and sending it as a sell would sell the BTC the account
// holds, which the strategy never asked for. On linear it opens a short;
// on spot a sell still sells.
func TestShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("SpotRefusesItAndKeepsTheCoin", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		b.fake.SetBalance("BTC", d("1"))
		o := marketOrder("BTCUSDT", "sell", "0.01")
		o.Action = "short"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, bybit.ReasonSpotShort, r.Reason)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate), "nothing is sent")
		require.Equal(t, "1", b.fake.Balance("BTC").WalletBalance.String())

		r, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "sell", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, "sell is how spot sells")
		require.Equal(t, "0.99", b.fake.Balance("BTC").WalletBalance.String())
	})
	t.Run("LinearOpensAShort", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "sell", "0.01")
		o.Action = "short"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		p := b.fake.Position("BTCUSDT")
		require.Equal(t, "Sell", p.Side)
		require.Equal(t, "0.01", p.Size.String())
	})
}

func TestLeverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("SetOnlyWhenTheVenueDiffers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		for range 3 {
			o := marketOrder("BTCUSDT", "buy", "0.01")
			o.Leverage = 20
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
		}
		lev, sets := b.fake.Leverage("BTCUSDT")
		require.Equal(t, "20", lev.String())
		require.Equal(t, 1, sets)

		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 5
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		lev, sets = b.fake.Leverage("BTCUSDT")
		require.Equal(t, "5", lev.String())
		require.Equal(t, 2, sets)
	})

	t.Run("AlreadyHeldIsNotSet", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		// 10 is already the symbol's leverage in the position list.
		for range 2 {
			o := marketOrder("ETHUSDT", "buy", "0.1")
			o.Leverage = 10
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
		}
		_, sets := b.fake.Leverage("ETHUSDT")
		require.Zero(t, sets)
	})

	t.Run("ChangedBehindHooxsBackIsSetAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 20
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		b.fake.SetLeverage("BTCUSDT", 3) // the app, or another replica
		o = marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 20
		_, err = b.venue.Place(ctx, o)
		require.NoError(t, err)
		lev, sets := b.fake.Leverage("BTCUSDT")
		require.Equal(t, "20", lev.String())
		require.Equal(t, 2, sets)
	})

	// Bybit takes fractional leverages (leverageStep 0.01); one set in its
	// app, 10.5, is not the 10 a signal asks for. It was once read
	// truncated (IntPart), equal to 10, and the order went out at 10.5x.
	t.Run("FractionalLeverageIsNotTheWholeOneBelow", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetFractionalLeverage("BTCUSDT", d("10.5"))
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 10
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
		lev, sets := b.fake.Leverage("BTCUSDT")
		require.Equal(t, "10", lev.String(), "the order went out at the leverage asked for")
		require.Equal(t, 1, sets)
	})

	t.Run("CloseNeverSetsLeverage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		_, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		b.fake.RefuseLeverage(true)
		o := marketOrder("BTCUSDT", "", "0.01")
		o.Action, o.ReduceOnly, o.Leverage = "close", true, 50
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
		_, sets := b.fake.Leverage("BTCUSDT")
		require.Zero(t, sets)
	})

	t.Run("HedgeModeIsRefusedBeforeSending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.SetHedgeMode(true)
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, bybit.ReasonHedgeMode, r.Reason)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})

	t.Run("RefusedLeverageRejectsWithoutPlacing", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 125 // above the fake's max of 100
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "set leverage 125")
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})

	t.Run("LostLeverageAnswerIsUnreachable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.Inject(bybitfake.PathLeverage, 1, bybitfake.Fault{HTTPStatus: 502})
		o := marketOrder("BTCUSDT", "buy", "0.01")
		o.Leverage = 20
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnreachable, "the order itself was never sent")
		require.NotErrorIs(t, err, exchange.ErrUnknownOutcome)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})
}
