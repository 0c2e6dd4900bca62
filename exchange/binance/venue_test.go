package binance_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// TestSign checks both HMAC examples from Binance's rest-api.md ("SIGNED
// Endpoint Examples for POST /api/v3/order").
func TestSign(t *testing.T) {
	t.Parallel()
	const secret = "NhqPtmdSJYdKjVHjA7PZj4Mge3R5YNiP1e3UZjInClVN65XAbvqqM6A7H5fATj0j"
	require.Equal(t, "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71",
		binance.Sign(secret, "symbol=LTCBTC&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559"))
	require.Equal(t, "e1353ec6b14d888f1164ae9af8228a3dbd508bc82eb867db8ab6046442f33ef3",
		binance.Sign(secret, "symbol=%EF%BC%91%EF%BC%92%EF%BC%93%EF%BC%94%EF%BC%95%EF%BC%96&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=0.1&recvWindow=5000&timestamp=1499827319559"))
}

func TestConfig(t *testing.T) {
	t.Parallel()
	_, err := binance.New(binance.Config{APIKey: "k"})
	require.ErrorContains(t, err, "api key set without api secret")
	_, err = binance.New(binance.Config{APISecret: "s"})
	require.ErrorContains(t, err, "api secret set without api key")
	_, err = binance.New(binance.Config{Market: "margin", APIKey: "k", APISecret: "s"})
	require.ErrorContains(t, err, "market")

	c := binance.Config{Market: binance.MarketFutures, Testnet: true}.WithDefaults()
	require.Equal(t, binance.FuturesTestnetBaseURL, c.BaseURL)
	require.Equal(t, binance.SpotBaseURL, binance.Config{}.WithDefaults().BaseURL)

	v, err := binance.New(binance.Config{APIKey: "k", APISecret: "s"})
	require.NoError(t, err)
	require.Equal(t, binance.DefaultRecvWindow+binance.DefaultLookupLag+binance.DefaultClockMargin, v.AcceptWindow())
}

func TestPlaceMarketFillsAndLookupFindsIt(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := marketOrder("buy", "0.0105")
		o.Symbol = "BINANCE:BTCUSDT.P"

		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "BTCUSDT", r.Symbol)
		require.Equal(t, "buy", r.Side)
		require.True(t, d("0.01").Equal(r.Quantity), "quantity rounded down to the step: %s", r.Quantity)
		require.True(t, r.FillPrice.Valid)
		require.True(t, d("50000").Equal(r.FillPrice.Decimal), "average fill price: %s", r.FillPrice.Decimal)
		require.NotEmpty(t, r.ExchangeOrderID)
		require.False(t, r.Price.Valid)

		got, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, r.ExchangeOrderID, got.ExchangeOrderID)
		require.Equal(t, exchange.StatusFilled, got.Status)
		require.True(t, d("50000").Equal(got.FillPrice.Decimal))

		require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
		if m == binance.MarketFutures {
			require.True(t, d("0.01").Equal(b.fake.Position("BTCUSDT")))
		} else {
			require.True(t, d("0.01").Equal(b.fake.Balance("BTC")))
		}
	})
}

func TestPlaceLimitRoundsPriceTowardPassiveSide(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		if m == binance.MarketSpot {
			b.fake.SetBalance("BTC", d("1"))
		}
		buy, err := b.venue.Place(ctx, limitOrder("buy", "0.0159", "49000.19"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, buy.Status)
		require.True(t, d("49000.1").Equal(buy.Price.Decimal), "buy rounds down: %s", buy.Price.Decimal)
		require.True(t, d("0.015").Equal(buy.Quantity))

		sell, err := b.venue.Place(ctx, limitOrder("sell", "0.02", "51000.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, sell.Status)
		require.True(t, d("51000.1").Equal(sell.Price.Decimal), "sell rounds up: %s", sell.Price.Decimal)
	})
}

// TestStatusMapping maps every order status Binance reports for a limit
// order, through the order query: a resting order ends cancelled or
// expired as Binance says, with what filled before (issue 19).
func TestStatusMapping(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status        string
		executed      string
		quote         string
		want          exchange.Status
		wantFillPrice string
		wantAvgPrice  string
	}{
		{"NEW", "0", "0", exchange.StatusOpen, "", ""},
		{"PARTIALLY_FILLED", "0.005", "250", exchange.StatusOpen, "", "50000"},
		{"FILLED", "0.01", "501", exchange.StatusFilled, "50100", "50100"},
		{"CANCELED", "0", "0", exchange.StatusCancelled, "", ""},
		{"CANCELED", "0.004", "200", exchange.StatusCancelled, "", "50000"},
		{"EXPIRED", "0", "0", exchange.StatusExpired, "", ""},
		{"EXPIRED", "0.002", "99", exchange.StatusExpired, "", "49500"},
		{"EXPIRED_IN_MATCH", "0", "0", exchange.StatusExpired, "", ""},
		{"REJECTED", "0", "0", exchange.StatusRejected, "", ""},
	}
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		for _, c := range cases {
			o := limitOrder("buy", "0.01", "40000")
			_, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.NoError(t, b.fake.SetOrderState(o.ClientOrderID, c.status, d(c.executed), d(c.quote)))
			r, err := b.venue.Lookup(ctx, o)
			require.NoError(t, err, c.status)
			require.Equal(t, c.want, r.Status, "%s executed %s", c.status, c.executed)
			require.True(t, d(c.executed).Equal(r.FilledQuantity), "%s: filled %s", c.status, r.FilledQuantity)
			require.True(t, d("0.01").Equal(r.Quantity), "quantity is what was sent")
			require.True(t, d("40000").Equal(r.Price.Decimal))
			if c.wantFillPrice == "" {
				require.False(t, r.FillPrice.Valid, c.status)
			} else {
				require.True(t, d(c.wantFillPrice).Equal(r.FillPrice.Decimal), "%s: fill price %s", c.status, r.FillPrice.Decimal)
			}
			if c.wantAvgPrice == "" {
				require.False(t, r.AvgPrice.Valid, c.status)
			} else {
				require.True(t, d(c.wantAvgPrice).Equal(r.AvgPrice.Decimal), "%s: average price %s", c.status, r.AvgPrice.Decimal)
			}
			if c.want == exchange.StatusRejected {
				require.Contains(t, r.Reason, "nothing filled")
			}
		}
	})
}

// TestMarketOrderExpiry: a market order that meets too little liquidity
// expires (EXPIRED, enums.md: "MARKET orders that partially fill"); with a
// partial fill it is filled for what executed (the position moved), with
// none it is rejected. Quantity stays what was sent, FilledQuantity is
// executedQty — from the placement's answer and from a lookup alike.
func TestMarketOrderExpiry(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		b.fake.SetMarketLiquidity("BTCUSDT", d("0.004"))
		o := marketOrder("buy", "0.01")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, d("50000").Equal(r.FillPrice.Decimal))
		require.True(t, d("0.01").Equal(r.Quantity), "quantity %s", r.Quantity)
		require.True(t, d("0.004").Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, d("0.004").Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)

		b.fake.SetMarketLiquidity("BTCUSDT", decimal.Zero)
		r, err = b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "expired")
		require.True(t, r.FilledQuantity.IsZero())

		b.fake.SetMarketLiquidity("BTCUSDT", d("-1"))
		r, err = b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, r.FilledQuantity.Equal(r.Quantity), "a full fill: filled %s of %s", r.FilledQuantity, r.Quantity)
	})
}

// TestLimitPartialFill: a resting limit order reports nothing filled, then
// what has filled while it stays open, then all of it.
func TestLimitPartialFill(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := limitOrder("buy", "0.01", "40000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.True(t, r.FilledQuantity.IsZero())

		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.003")))
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.True(t, d("0.003").Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)

		require.NoError(t, b.fake.PartialFill(o.ClientOrderID, d("0.007")))
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, d("0.01").Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)
	})
}

// TestDuplicateWhileOpenIsAdopted: Binance refuses a client order ID held
// by an open order (spot -2010 "Duplicate order sent.", futures -4116);
// PlaceOrAdopt adopts the open order instead of failing.
func TestDuplicateWhileOpenIsAdopted(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		o := limitOrder("buy", "0.01", "40000")
		first, err := b.venue.Place(ctx, o)
		require.NoError(t, err)

		_, err = b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrDuplicateClientOrderID)

		r := b.requireAdopted(t, ctx, o, false)
		require.Equal(t, first.ExchangeOrderID, r.ExchangeOrderID)
		require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
	})
}

// TestReusedIDAfterFillPlacesAgain proves Binance's real rule in the fake and
// why the gateway looks up first: once a market order under an ID filled,
// a blind re-place under the same ID creates a second order and doubles
// the position, while PlaceOrAdopt with lookupFirst adopts the first one.
func TestReusedIDAfterFillPlacesAgain(t *testing.T) {
	t.Parallel()
	for _, m := range markets {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			held := func(b *testBundle) decimal.Decimal {
				if m == binance.MarketFutures {
					return b.fake.Position("BTCUSDT")
				}
				return b.fake.Balance("BTC")
			}
			ctx := context.Background()

			b := setup(t, m)
			o := marketOrder("buy", "0.01")
			first, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, first.Status)

			r := b.requireAdopted(t, ctx, o, true)
			require.Equal(t, first.ExchangeOrderID, r.ExchangeOrderID)
			require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
			require.True(t, d("0.01").Equal(held(b)), "position not doubled: %s", held(b))

			// The blind re-place the lookup prevents.
			second, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.NotEqual(t, first.ExchangeOrderID, second.ExchangeOrderID)
			require.Equal(t, 2, b.fake.Placements(o.ClientOrderID))
			require.True(t, d("0.02").Equal(held(b)), "blind re-place doubled the position: %s", held(b))

			// A cancelled order frees its ID too.
			l := limitOrder("buy", "0.01", "40000")
			_, err = b.venue.Place(ctx, l)
			require.NoError(t, err)
			require.NoError(t, b.fake.CancelOrder(l.ClientOrderID))
			again, err := b.venue.Place(ctx, l)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, again.Status)
			require.Equal(t, 2, b.fake.Placements(l.ClientOrderID))
		})
	}
}

func TestLookupNotFoundAndMismatch(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		_, err := b.venue.Lookup(ctx, marketOrder("buy", "0.01"))
		require.ErrorIs(t, err, exchange.ErrNotFound)

		o := marketOrder("buy", "0.0105") // sent as 0.010
		_, err = b.venue.Place(ctx, o)
		require.NoError(t, err)

		_, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err, "the held order is o rounded to the step")

		other := o
		other.Side, other.Action = "sell", "sell"
		_, err = b.venue.Lookup(ctx, other)
		require.ErrorIs(t, err, exchange.ErrMismatch)

		other = o
		other.Quantity = d("0.02")
		_, err = b.venue.Lookup(ctx, other)
		require.ErrorIs(t, err, exchange.ErrMismatch)

		other = o
		other.Symbol = "ETHUSDT"
		_, err = b.venue.Lookup(ctx, other)
		require.ErrorIs(t, err, exchange.ErrNotFound, "orders are per symbol")

		_, adopted, err := exchange.PlaceOrAdopt(ctx, b.venue, func() exchange.Order {
			x := o
			x.Side, x.Action = "sell", "sell"
			return x
		}(), true)
		require.ErrorIs(t, err, exchange.ErrMismatch)
		require.False(t, adopted)
		require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
	})
}

func TestFakeServesBothMarketsApart(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	require.NotEmpty(t, fake.URL)
	spot, err := binance.New(binance.Config{APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	fut, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	ctx := context.Background()
	o := marketOrder("buy", "0.01")
	_, err = spot.Place(ctx, o)
	require.NoError(t, err)
	_, err = fut.Lookup(ctx, o)
	require.ErrorIs(t, err, exchange.ErrNotFound, "the futures book does not hold spot orders")
	_, err = fut.Place(ctx, o)
	require.NoError(t, err, "an ID open on spot does not block futures")
}

// TestArchivedOrderIsNeverNotFound: Binance spot answers a lookup of an
// order cancelled or expired with nothing executed long ago with -2026
// ORDER_ARCHIVED (errors.md). The order existed under the client order
// ID: the lookup reports it final with nothing filled, never "not found",
// which would let the order be placed again.
func TestArchivedOrderIsNeverNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t, binance.MarketSpot)
	ctx := context.Background()
	o := limitOrder("buy", "0.01", "40000")
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.NoError(t, b.fake.CancelOrder(o.ClientOrderID))
	require.NoError(t, b.fake.ArchiveOrder(o.ClientOrderID))

	r = b.requireAdopted(t, ctx, o, true)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "archived")
	require.True(t, r.FilledQuantity.IsZero())
	require.Equal(t, 1, b.fake.Placements(o.ClientOrderID), "not placed again")
}

// A spot buy reports the commission Binance took and its asset (the FULL
// answer's fills), so the ledger counts what the account received; the
// spot SpotSymbol names the base asset, futures is not spot.
func TestSpotFillReportsItsCommission(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetSpotCommission(d("0.001"))
	r, err := b.venue.Place(ctx, marketOrder("buy", "0.010"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
	require.Equal(t, "BTC", r.FeeAsset)
	require.True(t, d("0.00001").Equal(r.Fee), "fee %s", r.Fee)
	require.True(t, r.AvgPrice.Valid)

	symbol, base, spot, err := b.venue.SpotSymbol(ctx, "BINANCE:BTCUSDT")
	require.NoError(t, err)
	require.True(t, spot)
	require.Equal(t, "BTCUSDT", symbol)
	require.Equal(t, "BTC", base)

	_, _, spot, err = setup(t, binance.MarketFutures).venue.SpotSymbol(ctx, "BTCUSDT")
	require.NoError(t, err)
	require.False(t, spot)
}

// An order found by the order query (an adoption, a reconcile, a sweep)
// carries no fills: its commission comes from its trades, so the ledger
// counts an adopted buy net of the fee as it does a placed one.
func TestSpotLookupReadsTheCommissionFromTheTrades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetSpotCommission(d("0.001"))
	o := marketOrder("buy", "0.010")
	_, err := b.venue.Place(ctx, o)
	require.NoError(t, err)

	got, err := b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, "BTC", got.FeeAsset)
	require.True(t, d("0.00001").Equal(got.Fee), "fee %s", got.Fee)
	require.Equal(t, 1, b.fake.Requests("/api/v3/myTrades"))

	fut := setup(t, binance.MarketFutures)
	_, err = fut.venue.Place(ctx, o)
	require.NoError(t, err)
	_, err = fut.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Zero(t, fut.fake.Requests("/api/v3/myTrades"), "futures has no spot commission to read")
}
