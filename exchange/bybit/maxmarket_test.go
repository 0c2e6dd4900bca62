package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// bigSpotBTC serves spot BTCUSDT with instrument.mdx's example cap:
// lotSizeFilter.maxMarketOrderQty 41.5 ("Maximum Market order quantity";
// maxOrderAmt is "deprecated, no longer check maxOrderAmt, check
// maxLimitOrderQty and maxMarketOrderQty instead"), and 50 BTC held.
func bigSpotBTC(b *testBundle) {
	b.fake.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
		TickSize: d("0.1"), QtyStep: d("0.000001"), MinOrderQty: d("0.000011"), MinNotional: d("5"), MaxMktOrderQty: d("41.5")})
	b.fake.SetBalance("BTC", d("50"))
}

// bybit-spot reads maxMarketOrderQty and has hoox split a close above it,
// as linear does with maxMktOrderQty: one Market sell of everything a
// strategy holds above the cap is refused for good, and the strategy
// could never get out.
func TestSpotCloseIsSplitAtMaxMarketOrderQty(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketSpot)
	bigSpotBTC(b)
	// The close a spot strategy holding 50 BTC sends (sized from its
	// ledger: a partial close of 50 on the sell side).
	o := exchange.Order{ClientOrderID: clientID(), Symbol: "BTCUSDT", Action: "close", Side: "sell",
		OrderType: "market", Quantity: d("50"), Partial: true}
	facts, err := b.venue.SizingFacts(context.Background(), o, exchange.SizingNeed{Position: true})
	require.NoError(t, err)
	require.True(t, b.venue.SplitsCloses(), "bybit-spot splits a close above the cap")
	require.Equal(t, "41.5", facts.MaxMarketQty.String())
	require.Equal(t, "50", facts.Position.String())
}

// The fake refuses a spot Market order above the instrument's
// maxMarketOrderQty, as Bybit does, and takes one at the cap.
func TestFakeRefusesASpotMarketOrderAboveMaxMarketOrderQty(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketSpot)
	bigSpotBTC(b)
	ctx := context.Background()
	r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "sell", "50"))
	require.NoError(t, err)
	require.Equalf(t, exchange.StatusRejected, r.Status, "a spot Market sell of 50 BTC above maxMarketOrderQty 41.5 was %s", r.Status)
	require.Equal(t, "50", b.fake.Balance("BTC").WalletBalance.String(), "nothing sold")

	r, err = b.venue.Place(ctx, marketOrder("BTCUSDT", "sell", "41.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
}
