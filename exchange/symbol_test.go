package exchange_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

func TestVenueSymbol(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"BINANCE:BTCUSDT.P": "BTCUSDT",
		"BYBIT:BTCUSDT.P":   "BTCUSDT",
		"BTC/USDT":          "BTCUSDT",
		"btc-usdt":          "BTCUSDT",
		"ETH_USDT":          "ETHUSDT",
		" ethusdt ":         "ETHUSDT",
		"BTCUSDT":           "BTCUSDT",
	} {
		require.Equal(t, want, exchange.VenueSymbol(in), in)
	}
}
