package binance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

func TestFuturesClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []struct {
		action   string
		position string
		wantSide string // "" = rejected
		wantQty  string
	}{
		{"close_long", "0.5", "sell", "0.5"},
		{"close_long", "-0.5", "", ""},
		{"close_short", "-0.3", "buy", "0.3"},
		{"close_short", "0.3", "", ""},
		{"close", "0.25", "sell", "0.25"},
		{"close", "-0.25", "buy", "0.25"},
		{"close", "0", "", ""},
	}
	for _, c := range cases {
		t.Run(c.action+" "+c.position, func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			b.fake.SetPosition("BTCUSDT", d(c.position))
			o := closeOrder(c.action)
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			if c.wantSide == "" {
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, binance.ReasonNoPosition, r.Reason)
				require.Equal(t, 0, b.fake.Requests(b.path))
				require.True(t, d(c.position).Equal(b.fake.Position("BTCUSDT")))
				return
			}
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, c.wantSide, r.Side)
			require.True(t, d(c.wantQty).Equal(r.Quantity), "quantity %s", r.Quantity)
			require.True(t, b.fake.Position("BTCUSDT").IsZero(), "flat after close: %s", b.fake.Position("BTCUSDT"))
			orders := b.fake.Orders()
			require.True(t, orders[len(orders)-1].ReduceOnly, "sent reduce-only")

			// A retry of the same close adopts it; nothing is left to close.
			got := b.requireAdopted(t, ctx, o, true)
			require.Equal(t, r.ExchangeOrderID, got.ExchangeOrderID)
		})
	}
}

func TestSpotClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("sells the free base balance rounded down", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot)
		b.fake.SetBalance("BTC", d("0.0123"))
		for _, action := range []string{"close", "close_long"} {
			r, err := b.venue.Place(ctx, closeOrder(action))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status, action)
			require.Equal(t, "sell", r.Side)
			require.True(t, d("0.012").Equal(r.Quantity), "quantity %s", r.Quantity)
			require.True(t, d("0.0003").Equal(b.fake.Balance("BTC")))

			r, err = b.venue.Place(ctx, closeOrder(action))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status, "dust below the step is nothing to close")
			require.Equal(t, binance.ReasonNoPosition, r.Reason)
			b.fake.SetBalance("BTC", d("0.0123"))
		}
	})
	t.Run("close_short is refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot)
		b.fake.SetBalance("BTC", d("1"))
		r, err := b.venue.Place(ctx, closeOrder("close_short"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, binance.ReasonSpotNoShort, r.Reason)
		require.Equal(t, 0, b.fake.Requests(b.path))
	})
}

// A short signal on spot is refused before anything is sent: spot cannot
// open a short, and sending it as a sell would sell the BTC the account
// holds, which the strategy never asked for. On futures it opens a short;
// on spot a sell still sells.
func TestShort(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("spot refuses it and keeps the asset", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot)
		b.fake.SetBalance("BTC", d("1"))
		o := marketOrder("sell", "0.01")
		o.Action = "short"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, binance.ReasonSpotShort, r.Reason)
		require.Equal(t, 0, b.fake.Requests(b.path), "nothing is sent")
		require.Equal(t, "1", b.fake.Balance("BTC").String())

		r, err = b.venue.Place(ctx, marketOrder("sell", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, "sell is how spot sells")
		require.Equal(t, "0.99", b.fake.Balance("BTC").String())
	})
	t.Run("futures opens a short", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		o := marketOrder("sell", "0.01")
		o.Action = "short"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "-0.01", b.fake.Position("BTCUSDT").String())
	})
}

func TestLeverage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("futures sets it once per value", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		for range 3 {
			o := marketOrder("buy", "0.01")
			o.Leverage = 10
			_, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
		}
		require.Equal(t, 10, b.fake.Leverage("BTCUSDT"))
		require.Equal(t, 1, b.fake.LeverageCalls("BTCUSDT"), "cached after the first order")

		o := marketOrder("buy", "0.01")
		o.Leverage = 20
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, 20, b.fake.Leverage("BTCUSDT"))
		require.Equal(t, 2, b.fake.LeverageCalls("BTCUSDT"))

		o = marketOrder("buy", "0.01")
		o.Leverage = 500
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "Leverage 500 is not valid")
		require.Equal(t, 0, b.fake.Placements(o.ClientOrderID))
	})
	t.Run("spot ignores it", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot)
		o := marketOrder("buy", "0.01")
		o.Leverage = 10
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, 0, b.fake.Requests("/fapi/v1/leverage"))
	})
}

// Futures closes never touch the leverage, the leverage is read from
// positionRisk (never a cache), and an account in hedge mode is refused
// before anything is sent.
func TestFuturesLeverageAndPositionMode(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("CloseWithLeverageWhileChangesAreRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		b.fake.SetPosition("BTCUSDT", d("0.5"))
		b.fake.RefuseLeverage(true)
		o := closeOrder("close")
		o.Leverage = 7
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
		require.Zero(t, b.fake.LeverageCalls("BTCUSDT"))
	})

	t.Run("LeverageChangedBehindHooxsBackIsSetAgain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		for range 2 {
			o := marketOrder("buy", "0.01")
			o.Leverage = 5
			_, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
		}
		require.Equal(t, 1, b.fake.LeverageCalls("BTCUSDT"), "the second order found 5 at Binance")
		b.fake.SetLeverage("BTCUSDT", 2)
		o := marketOrder("buy", "0.01")
		o.Leverage = 5
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, 2, b.fake.LeverageCalls("BTCUSDT"))
		require.Equal(t, 5, b.fake.Leverage("BTCUSDT"))
	})

	t.Run("HedgeModeIsRefusedBeforeSending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		b.fake.SetHedgeMode(true)
		for _, o := range []exchange.Order{marketOrder("buy", "0.01"), closeOrder("close")} {
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Equal(t, binance.ReasonHedgeMode, r.Reason)
		}
		require.Zero(t, b.fake.Requests(b.path), "nothing sent")
	})
}

// A close planned on a side (a split close's part, a percent_of_position
// exit: Partial with Side) goes out only while that side still reduces
// the position; once the position has turned the other way, or is gone,
// it is refused as having no position to close and nothing is sent.
func TestFuturesPlannedCloseKeepsItsSide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ side, position, wantQty string }{
		{"sell", "0.5", "0.2"},
		{"sell", "0.1", "0.1"},
		{"sell", "-0.5", ""},
		{"buy", "0.5", ""},
		{"sell", "0", ""},
	} {
		t.Run(c.side+" "+c.position, func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			b.fake.SetPosition("BTCUSDT", d(c.position))
			o := closeOrder("close")
			o.Partial, o.Side, o.Quantity = true, c.side, d("0.2")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			if c.wantQty == "" {
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, binance.ReasonNoPosition, r.Reason)
				require.Equal(t, 0, b.fake.Requests(b.path), "nothing sent")
				require.True(t, d(c.position).Equal(b.fake.Position("BTCUSDT")))
				return
			}
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			require.Equal(t, c.side, r.Side)
			require.Equal(t, c.wantQty, r.Quantity.String())
		})
	}
}

// A close refused -2022 behind a take-profit for the whole position
// cancels it only when the close flattens: a whole-position close, or the
// first part of one split over the market maximum. A percent_of_position
// exit (Sizing) or a later part leaves some of the position open, which
// the take-profit still protects: refused with Binance's message and why,
// nothing cancelled.
func TestFuturesPartialCloseBehindATakeProfitCancelsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name    string
		mod     func(o *exchange.Order)
		cancels bool
	}{
		{"percent of position", func(o *exchange.Order) { o.Sizing = &exchange.Sizing{Type: exchange.QuantityPercentOfPosition} }, false},
		{"later part", func(o *exchange.Order) {}, false},
		{"first part of a whole close", func(o *exchange.Order) { o.Split = &exchange.Split{Position: "0.5"} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			b.fake.SetPosition("BTCUSDT", d("0.5"))
			tp := limitOrder("sell", "0.5", "70000")
			tp.ReduceOnly = true
			r, err := b.venue.Place(ctx, tp)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
			o := closeOrder("close")
			o.Partial, o.Side, o.Quantity = true, "sell", d("0.2")
			c.mod(&o)
			r, err = b.venue.Place(ctx, o)
			require.NoError(t, err)
			if c.cancels {
				require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
				require.Len(t, r.CancelledFirst, 1)
				require.Equal(t, "0.3", b.fake.Position("BTCUSDT").String())
				return
			}
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Equal(t, "ReduceOnly Order is rejected. "+binance.ReasonPartialCloseBlocked, r.Reason)
			require.Zero(t, b.fake.Cancels())
			require.Equal(t, "0.5", b.fake.Position("BTCUSDT").String())
		})
	}
}

// A whole-position close refused -2022 behind a take-profit cancels it and
// is sent again; refused again (another reduce-only order, or an algo
// order openOrders does not list, still blocks it), the close is rejected
// — and its report still lists the take-profit it cancelled
// (CancelledFirst), so the audit says the position lost it. The report
// once carried nothing: the cancel was silent.
func TestFuturesCloseRefusedAgainAfterCancellingReportsWhatItCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.5"))
	tp := limitOrder("sell", "0.5", "70000")
	tp.ReduceOnly = true
	r, err := b.venue.Place(ctx, tp)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultRefuse, Count: 2, Code: -2022, Msg: "ReduceOnly Order is rejected."})

	r, err = b.venue.Place(ctx, closeOrder("close"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Equal(t, 1, b.fake.Cancels(), "the take-profit was cancelled")
	require.Len(t, r.CancelledFirst, 1, "the rejected close reports the take-profit it cancelled")
	require.Equal(t, tp.ClientOrderID, r.CancelledFirst[0].ClientOrderID)
	require.Equal(t, "0.5", b.fake.Position("BTCUSDT").String())
}
