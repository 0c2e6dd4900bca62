package exchange_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestResolve(t *testing.T) {
	t.Parallel()
	entry := exchange.Order{Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market"}
	closing := exchange.Order{Symbol: "BTCUSDT", Action: "close", ReduceOnly: true, OrderType: "market"}
	with := func(o exchange.Order, qty string) exchange.Order { o.Quantity = d(qty); return o }
	lot := exchange.SizingFacts{Price: d("60000"), QuoteAsset: "USDT", FreeQuote: d("1000"), Step: d("0.001"), MinQty: d("0.001")}

	t.Run("QuoteRoundsDownToTheStep", func(t *testing.T) {
		t.Parallel()
		o, s, reason := exchange.Resolve(exchange.QuantityQuote, with(entry, "100"), lot)
		require.Empty(t, reason)
		require.Equal(t, "0.001", o.Quantity.String(), "100/60000 = 0.00166…, down to the step, never up")
		require.Equal(t, "60000", s.Price)
		require.Equal(t, "0.001", o.Sizing.Quantity)
	})
	t.Run("QuoteUsesTheLimitPrice", func(t *testing.T) {
		t.Parallel()
		o := with(entry, "120")
		o.OrderType, o.Price = "limit", decimal.NewNullDecimal(d("40000"))
		got, _, reason := exchange.Resolve(exchange.QuantityQuote, o, lot)
		require.Empty(t, reason)
		require.Equal(t, "0.003", got.Quantity.String())
	})
	t.Run("PercentOfBalance", func(t *testing.T) {
		t.Parallel()
		o, s, reason := exchange.Resolve(exchange.QuantityPercentOfBalance, with(entry, "50"), lot)
		require.Empty(t, reason)
		require.Equal(t, "0.008", o.Quantity.String(), "500 USDT / 60000 = 0.00833…")
		require.Equal(t, "1000", s.FreeQuote)
		require.Equal(t, "USDT", s.QuoteAsset)
	})
	t.Run("BelowTheMinimumIsRefused", func(t *testing.T) {
		t.Parallel()
		_, _, reason := exchange.Resolve(exchange.QuantityQuote, with(entry, "30"), lot)
		require.Contains(t, reason, "rounds down to 0")
		f := lot
		f.MinQty = d("0.01")
		_, _, reason = exchange.Resolve(exchange.QuantityQuote, with(entry, "300"), f)
		require.Contains(t, reason, "below the venue's minimum quantity 0.01")
		f.FreeQuote = decimal.Zero
		_, _, reason = exchange.Resolve(exchange.QuantityPercentOfBalance, with(entry, "100"), f)
		require.NotEmpty(t, reason)
	})
	t.Run("PercentOfPosition", func(t *testing.T) {
		t.Parallel()
		f := lot
		f.Position = d("-0.0105")
		o, s, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, with(closing, "50"), f)
		require.Empty(t, reason)
		require.Equal(t, "buy", o.Side, "a short is reduced by a buy")
		require.True(t, o.Partial)
		require.Equal(t, "0.005", o.Quantity.String())
		require.Equal(t, "-0.0105", s.Position)

		cl := with(closing, "50")
		cl.Action = "close_long"
		_, _, reason = exchange.Resolve(exchange.QuantityPercentOfPosition, cl, f)
		require.Equal(t, "no position to close", reason)
	})
	t.Run("SpotPositionIsTheLedgerAtMostTheFreeBalance", func(t *testing.T) {
		t.Parallel()
		f := lot
		f.BaseAsset = "BTC"
		for _, tt := range []struct{ ledger, free, pct, want string }{
			{"0.00999", "1.5", "100", "0.009"}, // the strategy's holding, down to the step
			{"0.5", "0.2", "100", "0.2"},       // never more than is free
			{"0.5", "1", "50", "0.25"},         // a share of the holding
		} {
			f.Ledger, f.Position = decimal.NewNullDecimal(d(tt.ledger)), d(tt.free)
			o, s, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, with(closing, tt.pct), f)
			require.Empty(t, reason)
			require.Equal(t, tt.want, o.Quantity.String(), "ledger %s, free %s, %s %%", tt.ledger, tt.free, tt.pct)
			require.Equal(t, "sell", o.Side)
			require.Equal(t, tt.ledger, s.Ledger)
			require.Equal(t, tt.free, s.FreeBase)
		}
		f.Ledger, f.Position, f.Unrecorded = decimal.NewNullDecimal(d("0.5")), d("3"), d("0.2")
		o, s, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, with(closing, "100"), f)
		require.Empty(t, reason)
		require.Equal(t, "0.3", o.Quantity.String(), "a sell sent but not recorded counts as sold")
		require.Equal(t, "0.2", s.Unrecorded)
		f.Unrecorded = decimal.Zero

		f.Ledger, f.Position = decimal.NewNullDecimal(decimal.Zero), d("3")
		_, s, reason = exchange.Resolve(exchange.QuantityPercentOfPosition, with(closing, "100"), f)
		require.Contains(t, reason, "nothing to sell: the strategy holds 0 BTC through hoox and the free balance is 3")
		require.Equal(t, "0", s.Position)
	})
	t.Run("SpotSellPercentOfBalanceIsAShareOfTheBaseHeld", func(t *testing.T) {
		t.Parallel()
		spot := &exchange.Ledger{Strategy: "a", Symbol: "BTCUSDT", BaseAsset: "BTC"}
		sell := exchange.Order{Symbol: "BTCUSDT", Action: "sell", Side: "sell", OrderType: "market", Ledger: spot}
		require.Equal(t, exchange.SizingNeed{Position: true}, exchange.Need(exchange.QuantityPercentOfBalance, sell),
			"the free base asset, not the quote")
		f := lot
		f.Position = d("0.05")
		o, s, reason := exchange.Resolve(exchange.QuantityPercentOfBalance, with(sell, "50"), f)
		require.Empty(t, reason)
		require.Equal(t, "0.025", o.Quantity.String(), "half of the 0.05 BTC free; the 1000 USDT free is not what a sell spends")
		require.Equal(t, "0.05", s.FreeBase)
		require.Equal(t, "BTC", s.BaseAsset)
		require.Empty(t, s.FreeQuote)

		// A spot buy still spends the quote; a sell on derivatives (no
		// ledger) opens or adds to a short, sized by the margin balance.
		buy := sell
		buy.Action, buy.Side = "buy", "buy"
		o, _, reason = exchange.Resolve(exchange.QuantityPercentOfBalance, with(buy, "50"), f)
		require.Empty(t, reason)
		require.Equal(t, "0.008", o.Quantity.String())
		short := sell
		short.Ledger = nil
		o, _, reason = exchange.Resolve(exchange.QuantityPercentOfBalance, with(short, "50"), f)
		require.Empty(t, reason)
		require.Equal(t, "0.008", o.Quantity.String())
	})
	t.Run("RefusedSymbol", func(t *testing.T) {
		t.Parallel()
		_, _, reason := exchange.Resolve(exchange.QuantityQuote, with(entry, "100"), exchange.SizingFacts{Refused: "unknown symbol"})
		require.Equal(t, "unknown symbol", reason)
	})
}
