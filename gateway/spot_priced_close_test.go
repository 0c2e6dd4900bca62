package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// A bybit-spot close that carries a price (the venue template's
// "price": "{{close}}" with market_position flat, or any close with a
// price) is an order_type limit signal; the adapter always sends a close as
// a Market sell, but sizing reads maxMarketOrderQty only for a market
// order, so a close above the cap is not split and Bybit refuses the one
// Market sell for good (170341): the strategy can never exit.
func TestPricedBybitSpotCloseAboveTheCapIsSplit(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.bybit.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "ETHUSDT", BaseCoin: "ETH", QuoteCoin: "USDT",
		TickSize: d("0.01"), QtyStep: d("0.0001"), MinNotional: d("5"), MaxMktOrderQty: d("100")})
	b.bybit.SetBalance("ETH", d("230"))
	_, err := db.SetLedger(ctx, b.pool, db.LedgerKey{Exchange: "bybit-spot", Mode: "live", Symbol: "ETHUSDT", Strategy: ""},
		d("230"), "bought before hoox", "admin")
	require.NoError(t, err)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit-spot","symbol":"ETHUSDT","action":"sell","market_position":"flat","quantity":"1","price":"3000","trace_id":"bybit-spot-priced-split"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "a close of 230 ETH with a cap of 100 per Market sell")
	require.True(t, b.bybit.Balance("ETH").WalletBalance.IsZero(), "sold: %s left", b.bybit.Balance("ETH").WalletBalance)
	require.Equal(t, "0", ledgerOf(t, b, "bybit-spot", "ETHUSDT", ""))
}

// The same on Binance spot: a close with a price is sent as a MARKET sell
// (resolveClose), but sized with LOT_SIZE and no MARKET_LOT_SIZE maximum,
// so a close above MARKET_LOT_SIZE maxQty is one MARKET sell Binance
// refuses (-1013): the strategy's holding can never be sold by it.
func TestPricedBinanceSpotCloseAboveTheMarketMaximumIsSplit(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bigETH(b.binance)
	b.binance.SetBalance("ETH", decimal.RequireFromString("230"))
	_, err := db.SetLedger(ctx, b.pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "ETHUSDT", Strategy: ""},
		decimal.RequireFromString("230"), "bought before hoox", "admin")
	require.NoError(t, err)
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"sell","market_position":"flat","quantity":"1","price":"3000","trace_id":"split-spot-priced"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, "0", ledgerOf(t, b, "binance", "ETHUSDT", ""))
}
