package bybit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

func TestConfig(t *testing.T) {
	t.Parallel()

	t.Run("RequiresKeyAndSecret", func(t *testing.T) {
		t.Parallel()
		_, err := bybit.New(bybit.Config{APIKey: "k"})
		require.ErrorContains(t, err, "api secret is empty")
		_, err = bybit.New(bybit.Config{APISecret: "s"})
		require.ErrorContains(t, err, "api key is empty")
		_, err = bybit.New(bybit.Config{APIKey: "k", APISecret: "s", Market: "inverse"})
		require.ErrorContains(t, err, "category")
	})

	t.Run("DefaultsAndAcceptWindow", func(t *testing.T) {
		t.Parallel()
		cfg := bybit.Config{APIKey: "k", APISecret: "s"}.WithDefaults()
		require.Equal(t, bybit.MarketLinear, cfg.Market)
		require.Equal(t, bybit.BaseURL, cfg.BaseURL)
		require.Equal(t, 5*time.Second, cfg.RecvWindow)
		v, err := bybit.New(bybit.Config{APIKey: "k", APISecret: "s", Market: bybit.MarketSpot})
		require.NoError(t, err)
		// recv_window 5 s + lookup lag 10 s + clock margin 2 s.
		require.Equal(t, 17*time.Second, v.AcceptWindow())
	})

	t.Run("LogValueHidesSecret", func(t *testing.T) {
		t.Parallel()
		cfg := bybit.Config{APIKey: "the-key", APISecret: "the-secret"}.WithDefaults()
		s := cfg.LogValue().String()
		require.NotContains(t, s, "the-secret")
		require.NotContains(t, s, "the-key")
		require.Contains(t, s, "api_key_set=true")
	})
}

func TestPlaceLinear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MarketBuyFillsRoundedDownWithTradingViewSymbol", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BYBIT:BTCUSDT.P", "buy", "0.0109")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "BTCUSDT", r.Symbol)
		require.Equal(t, "buy", r.Side)
		require.Equal(t, "0.01", r.Quantity.String())
		require.Equal(t, "60000", r.FillPrice.Decimal.String())
		require.False(t, r.Price.Valid, "a market order reports no limit price")
		require.NotEmpty(t, r.ExchangeOrderID)

		held, ok := b.fake.Order(bybitfake.CategoryLinear, o.ClientOrderID)
		require.True(t, ok)
		require.Equal(t, "0.01", held.Qty.String())
		require.Equal(t, "Market", held.OrderType)
		require.False(t, held.ReduceOnly)
		require.Equal(t, bybitfake.Position{Side: "Buy", Size: d("0.01")}, b.fake.Position("BTCUSDT"))
	})

	t.Run("LimitPricesRoundTowardThePassiveSide", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		buy, err := b.venue.Place(ctx, limitOrder("BTCUSDT", "buy", "0.01", "59999.97"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, buy.Status)
		require.Equal(t, "59999.9", buy.Price.Decimal.String())

		sell, err := b.venue.Place(ctx, limitOrder("BTCUSDT", "sell", "0.01", "60000.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, sell.Status)
		require.Equal(t, "60000.1", sell.Price.Decimal.String())
	})

	t.Run("UnknownSymbolRejectedBeforeSending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		r, err := b.venue.Place(ctx, marketOrder("NOPEUSDT", "buy", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, bybit.ReasonUnknownSymbol)
		require.Zero(t, b.fake.Requests(bybitfake.PathCreate))
	})

	t.Run("VenueRefusalIsARejectedReportWithItsMessage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.InjectPlacements(1, bybitfake.Refuse(110007, "Available balance is insufficient"))
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "Available balance is insufficient", r.Reason)
		require.Empty(t, b.fake.Orders())
	})
}

func TestPlaceSpot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MarketBuyIsInBaseCoin", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		o := marketOrder("BTC/USDT", "buy", "0.0123456789")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "0.012345", r.Quantity.String())
		// Bybit's default unit for a spot market buy is the quote coin;
		// the adapter asks for base so 0.012345 means BTC, not USDT.
		require.Equal(t, "0.012345", b.fake.Balance("BTC").WalletBalance.String())
		require.Equal(t, "99259.3", b.fake.Balance("USDT").WalletBalance.String())
		held, _ := b.fake.Order(bybitfake.CategorySpot, o.ClientOrderID)
		require.Equal(t, "baseCoin", held.MarketUnit)
	})

	t.Run("InsufficientBalanceRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "10"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "Balance insufficient", r.Reason)
	})

	t.Run("FeeInTheReceivedCoin", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		b.fake.SetSpotFeeRate(decimal.RequireFromString("0.001"))
		r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, "BTC", r.FeeAsset, "a spot buy pays its fee in the base coin")
		require.Equal(t, "0.00001", r.Fee.String())
		require.True(t, r.AvgPrice.Valid)
		r, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "sell", "0.005"))
		require.NoError(t, err)
		require.Equal(t, "USDT", r.FeeAsset, "a spot sell pays it in the quote coin")
		require.True(t, r.Fee.IsPositive())

		symbol, base, spot, err := b.venue.SpotSymbol(ctx, "BYBIT:BTCUSDT")
		require.NoError(t, err)
		require.Equal(t, []any{"BTCUSDT", "BTC", true}, []any{symbol, base, spot})
		_, _, spot, err = setup(t, bybit.MarketLinear).venue.SpotSymbol(ctx, "BTCUSDT")
		require.NoError(t, err)
		require.False(t, spot)
	})

	t.Run("LeverageIgnored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketSpot)
		o := marketOrder("BTCUSDT", "buy", "0.001")
		o.Leverage = 20
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Zero(t, b.fake.Requests(bybitfake.PathLeverage))
	})
}

// TestLookupStatusMapping maps every order status Bybit reports for a
// limit order.
func TestLookupStatusMapping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		status, cumExec string
		want            exchange.Status
		wantFill        string
	}{
		{"New", "0", exchange.StatusOpen, ""},
		{"PartiallyFilled", "0.004", exchange.StatusOpen, ""},
		{"Untriggered", "0", exchange.StatusOpen, ""},
		{"Filled", "0.01", exchange.StatusFilled, "59000"},
		// A resting limit order that closed is cancelled, with what
		// filled before kept (issue 19).
		{"Cancelled", "0", exchange.StatusCancelled, ""},
		{"Cancelled", "0.004", exchange.StatusCancelled, ""},
		{"PartiallyFilledCanceled", "0.004", exchange.StatusCancelled, ""},
		{"Rejected", "0", exchange.StatusRejected, ""},
		{"Deactivated", "0", exchange.StatusCancelled, ""},
	}
	for _, tt := range tests {
		t.Run(tt.status+"_"+tt.cumExec, func(t *testing.T) {
			t.Parallel()
			b := setup(t, bybit.MarketLinear)
			o := limitOrder("BTCUSDT", "buy", "0.01", "59000")
			_, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.True(t, b.fake.UpdateOrder(bybitfake.CategoryLinear, o.ClientOrderID, func(fo *bybitfake.Order) {
				fo.Status, fo.CumExecQty, fo.AvgPrice = tt.status, d(tt.cumExec), d("59000")
				if tt.status == "Rejected" {
					fo.RejectReason = "EC_PostOnlyWillTakeLiquidity"
				}
			}))
			r, err := b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, tt.want, r.Status)
			require.Equal(t, "0.01", r.Quantity.String())
			require.Equal(t, tt.cumExec, r.FilledQuantity.String())
			require.Equal(t, "59000", r.Price.Decimal.String())
			if tt.wantFill != "" {
				require.Equal(t, tt.wantFill, r.FillPrice.Decimal.String())
			} else {
				require.False(t, r.FillPrice.Valid)
			}
			if tt.want == exchange.StatusRejected {
				require.Contains(t, r.Reason, strings.ToLower(tt.status))
			}
			if tt.status == "Rejected" {
				require.Contains(t, r.Reason, "EC_PostOnlyWillTakeLiquidity")
			}
		})
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		_, err := b.venue.Lookup(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
		require.ErrorIs(t, err, exchange.ErrNotFound)
		// History's last 7 days, then 7 days per query back over the
		// 13-week lookback.
		require.Equal(t, 1+12, b.fake.Requests(bybitfake.PathHistory), "history is asked, back over the lookback, before giving up")
	})

	t.Run("FallsBackToHistory", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "sell", "0.02")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		b.fake.ForgetClosedInRealtime()
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, 1, b.fake.Requests(bybitfake.PathHistory))
	})

	// order-list.mdx: history without startTime covers the last 7 days; a
	// filled order stays queryable for 2 years, by 7-day windows. A lookup
	// of an order older than a week must find it, never read "not found"
	// (which would let the gateway try to place it again).
	t.Run("FilledOrderOlderThanAWeek", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := marketOrder("BTCUSDT", "buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		b.fake.ForgetClosedInRealtime() // as after a Bybit restart
		b.clock.Advance(10 * 24 * time.Hour)
		r, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "0.01", r.FilledQuantity.String())
	})

	t.Run("MismatchUnderTheSameID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		o := limitOrder("BTCUSDT", "buy", "0.01", "50000")
		_, err := b.venue.Place(ctx, o)
		require.NoError(t, err)

		for name, change := range map[string]func(*exchange.Order){
			"held for quantity 0.01":  func(x *exchange.Order) { x.Quantity = d("0.02") },
			"held as a buy":           func(x *exchange.Order) { x.Side, x.Action = "sell", "sell" },
			"held for symbol BTCUSDT": func(x *exchange.Order) { x.Symbol = "ETHUSDT" },
		} {
			other := o
			change(&other)
			_, err := b.venue.Lookup(ctx, other)
			require.ErrorIs(t, err, exchange.ErrMismatch, name)
			require.ErrorContains(t, err, name)
		}
		// The same signal, with a quantity that rounds to what was sent,
		// is the order.
		same := o
		same.Quantity = d("0.0104")
		r, err := b.venue.Lookup(ctx, same)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
	})
}

func TestDuplicateClientOrderID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	for _, cat := range []bybit.Market{bybit.MarketLinear, bybit.MarketSpot} {
		t.Run(string(cat)+"/TakenForEverEvenAfterFill", func(t *testing.T) {
			t.Parallel()
			b := setup(t, cat)
			o := marketOrder("BTCUSDT", "buy", "0.01")
			first, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, first.Status)

			// Unlike Binance, Bybit keeps an orderLinkId taken after the
			// order filled: a blind re-place is refused, not doubled.
			_, err = b.venue.Place(ctx, o)
			require.ErrorIs(t, err, exchange.ErrDuplicateClientOrderID)

			r, adopted, err := exchange.PlaceOrAdopt(ctx, b.venue, o, false)
			require.NoError(t, err)
			require.True(t, adopted)
			require.Equal(t, first.ExchangeOrderID, r.ExchangeOrderID)
			require.Len(t, b.fake.Orders(), 1)
			require.Equal(t, 3, b.fake.Attempts(o.ClientOrderID))
			if cat == bybit.MarketLinear {
				require.Equal(t, "0.01", b.fake.Position("BTCUSDT").Size.String())
			} else {
				require.Equal(t, "0.01", b.fake.Balance("BTC").WalletBalance.String())
			}
		})
	}

	t.Run("RefusedPlacementDoesNotTakeTheID", func(t *testing.T) {
		t.Parallel()
		b := setup(t, bybit.MarketLinear)
		b.fake.InjectPlacements(1, bybitfake.Refuse(110007, "Available balance is insufficient"))
		o := marketOrder("BTCUSDT", "buy", "0.01")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		r, err = b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// Bybit's orderLinkId is at most 36 letters, digits, dashes and
// underscores. An ID outside that rule is refused before anything is sent
// (Bybit would answer a param error), and one at the limit is placed.
func TestClientOrderIDCheckedBeforeSending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	refused := map[string]string{
		"Empty":        "",
		"37Characters": "hx" + strings.Repeat("a", 35),
		// Binance allows '.', ':' and '/'; Bybit does not.
		"Dot":      "hx.abc",
		"Colon":    "hx:abc",
		"Slash":    "hx/abc",
		"Space":    "hx abc",
		"NonASCII": "hxéabc",
	}
	for _, cat := range []bybit.Market{bybit.MarketLinear, bybit.MarketSpot} {
		for name, id := range refused {
			t.Run(string(cat)+"/"+name, func(t *testing.T) {
				t.Parallel()
				b := setup(t, cat)
				o := marketOrder("BTCUSDT", "buy", "0.01")
				o.ClientOrderID = id
				r, err := b.venue.Place(ctx, o)
				require.NoError(t, err)
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, bybit.ReasonClientOrderID, r.Reason)
				require.Zero(t, b.fake.Requests(bybitfake.PathCreate), "nothing is sent")
				require.Empty(t, b.fake.Orders())
			})
		}
		t.Run(string(cat)+"/36CharactersWithDashAndUnderscore", func(t *testing.T) {
			t.Parallel()
			b := setup(t, cat)
			o := marketOrder("BTCUSDT", "buy", "0.01")
			o.ClientOrderID = "hx-" + strings.Repeat("Z9_", 11)
			require.Len(t, o.ClientOrderID, 36)
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			held, ok := b.fake.Order(string(cat), o.ClientOrderID)
			require.True(t, ok)
			require.Equal(t, r.ExchangeOrderID, held.OrderID)
		})
	}
}

// errorsIsAll asserts err wraps every target.
func errorsIsAll(t *testing.T, err error, targets ...error) {
	t.Helper()
	require.Error(t, err)
	for _, target := range targets {
		require.True(t, errors.Is(err, target), "%v does not wrap %v", err, target)
	}
}

func TestConcurrentPlaceOrAdoptPlacesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	o := marketOrder("BTCUSDT", "buy", "0.01")
	const n = 8
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			r, _, err := exchange.PlaceOrAdopt(ctx, b.venue, o, false)
			ids <- r.ExchangeOrderID
			errs <- err
		}()
	}
	seen := map[string]bool{}
	for range n {
		require.NoError(t, <-errs)
		seen[<-ids] = true
	}
	require.Len(t, seen, 1, "every attempt reports the one order")
	require.Len(t, b.fake.Orders(), 1)
	require.Equal(t, "0.01", b.fake.Position("BTCUSDT").Size.String())
}

// TestPartialFills: a market order is an IOC that Bybit cancels after a
// partial fill (PartiallyFilledCanceled): it is filled for what executed,
// never rejected; with nothing filled (Cancelled) it is rejected. Quantity
// stays what was sent, FilledQuantity is cumExecQty. A resting limit order
// reports what has filled while it stays open.
func TestPartialFills(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	categories := map[bybit.Market]string{bybit.MarketLinear: bybitfake.CategoryLinear, bybit.MarketSpot: bybitfake.CategorySpot}
	for c, fc := range categories {
		t.Run(string(c)+"/MarketPartlyFilled", func(t *testing.T) {
			t.Parallel()
			b := setup(t, c)
			b.fake.SetMarketLiquidity(fc, "BTCUSDT", d("0.004"))
			o := marketOrder("BTCUSDT", "buy", "0.01")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "0.01", r.Quantity.String())
			require.Equal(t, "0.004", r.FilledQuantity.String())
			require.Equal(t, "60000", r.FillPrice.Decimal.String())
			r, err = b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "0.004", r.FilledQuantity.String())
		})

		t.Run(string(c)+"/MarketNothingFilled", func(t *testing.T) {
			t.Parallel()
			b := setup(t, c)
			b.fake.SetMarketLiquidity(fc, "BTCUSDT", d("0"))
			r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Contains(t, r.Reason, "cancelled")
			require.True(t, r.FilledQuantity.IsZero())
		})

		t.Run(string(c)+"/MarketFullyFilled", func(t *testing.T) {
			t.Parallel()
			b := setup(t, c)
			r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.True(t, r.FilledQuantity.Equal(r.Quantity), "filled %s of %s", r.FilledQuantity, r.Quantity)
		})

		t.Run(string(c)+"/LimitPartlyFilled", func(t *testing.T) {
			t.Parallel()
			b := setup(t, c)
			o := limitOrder("BTCUSDT", "buy", "0.01", "59000")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.True(t, r.FilledQuantity.IsZero())

			require.True(t, b.fake.PartialFill(fc, o.ClientOrderID, d("0.003")))
			r, err = b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.Equal(t, "0.003", r.FilledQuantity.String())

			require.True(t, b.fake.PartialFill(fc, o.ClientOrderID, d("0.007")))
			r, err = b.venue.Lookup(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "0.01", r.FilledQuantity.String())
		})
	}
}
