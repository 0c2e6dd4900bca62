package binance_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

func TestRoundingHelpers(t *testing.T) {
	t.Parallel()
	f := binance.Filters{StepSize: d("0.001"), MarketStepSize: d("0.01"), TickSize: d("0.5")}
	require.Equal(t, "1.234", f.RoundQuantity(d("1.2349"), false).String())
	require.Equal(t, "1.23", f.RoundQuantity(d("1.2349"), true).String())
	require.Equal(t, "100", f.RoundPrice(d("100.4"), "buy").String())
	require.Equal(t, "100.5", f.RoundPrice(d("100.4"), "sell").String())
	require.Equal(t, "100.5", f.RoundPrice(d("100.5"), "sell").String())
}

// TestRefusedBeforeSending: below the minimum quantity (after rounding
// down) or the minimum notional, the order is a rejected Report and the
// fake never sees an order request.
func TestRefusedBeforeSending(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {

		r, err := b.venue.Place(ctx, marketOrder("buy", "0.0009"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "below the minimum")

		// Limit: 0.001 at 1000 is a notional of 1, under 5.
		r, err = b.venue.Place(ctx, limitOrder("buy", "0.001", "1000"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "notional")

		// Market with the signal's price: that price decides, even when
		// the ticker's would pass.
		o := marketOrder("buy", "0.001")
		o.Price = decimal.NewNullDecimal(d("1000"))
		r, err = b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "notional 1")
		require.Equal(t, 0, b.fake.Requests(b.path), "nothing was sent")

		// Market without a price: the ticker's price decides.
		r, err = b.venue.Place(ctx, marketOrder("buy", "0.001"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
		placed := b.fake.Requests(b.path)
		require.Equal(t, 1, placed)

		b.fake.SetPrice("BTCUSDT", d("1000"))
		r, err = b.venue.Place(ctx, marketOrder("buy", "0.001"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Contains(t, r.Reason, "notional")
		require.Equal(t, placed, b.fake.Requests(b.path), "nothing more was sent")
	})
}

// TestFilterFailureRefreshesFilters: Binance changed a step size after the
// venue cached it; the order is refused on the filter, the venue reads the
// filters again and places the order rounded to the new step.
func TestFilterFailureRefreshesFilters(t *testing.T) {
	t.Parallel()
	eachMarket(t, func(t *testing.T, ctx context.Context, b *testBundle, m binance.Market) {
		infoPath := "/api/v3/exchangeInfo"
		if m == binance.MarketFutures {
			infoPath = "/fapi/v1/exchangeInfo"
		}
		_, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 1, b.fake.Requests(infoPath))

		sym := binancefake.DefaultSymbols()[0]
		sym.StepSize, sym.MinQty = d("0.01"), d("0.01")
		b.fake.SetSymbol(sym)

		o := marketOrder("buy", "0.015")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.True(t, d("0.01").Equal(r.Quantity), "rounded to the new step: %s", r.Quantity)
		require.Equal(t, 2, b.fake.Requests(infoPath))
		require.Equal(t, 1, b.fake.Placements(o.ClientOrderID))
		require.Contains(t, b.logs.String(), "filters re-read")

		// Filters are also re-read once they are an hour old.
		_, err = b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 2, b.fake.Requests(infoPath))
		b.clock.Advance(binance.DefaultFilterTTL)
		_, err = b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, 3, b.fake.Requests(infoPath))
	})
}

// TestRefusedByVenue: refusals Binance gives for good are rejected Reports
// with Binance's message.
func TestRefusedByVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("spot insufficient balance", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketSpot)
		r, err := b.venue.Place(ctx, marketOrder("sell", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "Account has insufficient balance for requested action.", r.Reason)
	})
	t.Run("futures margin insufficient", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		b.fake.SetFuturesWallet(d("1"))
		r, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "Margin is insufficient.", r.Reason)
	})
	t.Run("futures reduce only without position", func(t *testing.T) {
		t.Parallel()
		b := setup(t, binance.MarketFutures)
		o := marketOrder("sell", "0.01")
		o.ReduceOnly = true
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "ReduceOnly Order is rejected.", r.Reason)
	})
	for _, m := range markets {
		t.Run(string(m)+" unknown symbol", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			o := marketOrder("buy", "1")
			o.Symbol = "NOPEUSDT"
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Equal(t, "Invalid symbol.", r.Reason)
			_, err = b.venue.Lookup(ctx, o)
			require.ErrorIs(t, err, exchange.ErrNotFound)
		})
		t.Run(string(m)+" bad client order id", func(t *testing.T) {
			t.Parallel()
			b := setup(t, m)
			o := marketOrder("buy", "0.01")
			o.ClientOrderID = "has spaces!"
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Equal(t, binance.ReasonClientOrderID, r.Reason)
		})
	}
}

// TestFuturesDocumentedRefusalsAreNotReconciled: USDⓈ-M refusals its
// error-code.md documents, each answered in a 400 before anything is
// booked, are refused for good (a rejected Report with Binance's words,
// 422) or, for the account's own state, nothing sent (503): never an
// unknown outcome, which answered 202, reconciled an order that does not
// exist and ended the trace failed as a missed trade.
func TestFuturesDocumentedRefusalsAreNotReconciled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		code    int
		msg     string
		refused bool
	}{
		{-4131, "The counterparty's best price does not meet the PERCENT_PRICE filter limit", true},
		{-4118, "ReduceOnly Order Failed. Please check your existing position and open orders", true},
		{-4140, "Invalid symbol status for opening position", true},
		{-4189, "Restricted account permission: can only place reduceOnly order on the symbol.", true},
		{-4400, "Futures Trading Quantitative Rules violated, only reduceOnly order is allowed, please try again later.", true},
		{-4401, "Futures Trading Risk Control Rules of large position holding violated, only reduceOnly order is allowed, please reduce the position. .", true},
		{-4402, "Dear user, as per our Terms of Use and compliance with local regulations, this feature is currently not available in your region.", true},
		{-4192, "Trade forbidden due to Cooling-off Period.", false},
	} {
		t.Run(strconv.Itoa(c.code), func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultRefuse, Code: c.code, Msg: c.msg})
			r, err := b.venue.Place(ctx, marketOrder("buy", "0.01"))
			require.NotErrorIs(t, err, exchange.ErrUnknownOutcome, "Binance documents %d as a refusal", c.code)
			if c.refused {
				require.NoError(t, err)
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, c.msg, r.Reason)
			} else {
				require.ErrorIs(t, err, exchange.ErrUnreachable)
			}
			require.Empty(t, b.fake.Orders())
		})
	}
}
