package exchange_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

// For decides which account a signal trades on: a live signal always goes
// to the live account, a test signal to the venue's testnet account when one
// is configured (HOOX_<VENUE>_TESTNET_API_KEY/_SECRET), else to paper, and
// never to the live account.
func TestRegistryForRoutesTestSignals(t *testing.T) {
	t.Parallel()
	paper, binanceLive, binanceTestnet, bybitLive := newFakeVenue(), newFakeVenue(), newFakeVenue(), newFakeVenue()
	reg := exchange.NewRegistryOf(
		exchange.Entry{Name: exchange.PaperName, Live: paper},
		exchange.Entry{Name: "binance", Live: binanceLive, Test: binanceTestnet},
		exchange.Entry{Name: "bybit", Live: bybitLive},
	)
	tests := []struct {
		name     string
		exchange string
		test     bool
		want     exchange.Venue
	}{
		{"LiveSignalGoesLiveEvenWithATestnetAccount", "binance", false, binanceLive},
		{"TestSignalGoesToTheTestnetAccount", "binance", true, binanceTestnet},
		{"LiveSignalWithoutTestnetAccountGoesLive", "bybit", false, bybitLive},
		{"TestSignalWithoutTestnetAccountGoesToPaper", "bybit", true, paper},
		{"PaperLive", exchange.PaperName, false, paper},
		{"PaperTest", exchange.PaperName, true, paper},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := reg.For(tt.exchange, tt.test)
			require.True(t, ok)
			require.Same(t, tt.want, got)
		})
	}

	t.Run("UnknownExchangeIsNotConfigured", func(t *testing.T) {
		t.Parallel()
		for _, test := range []bool{false, true} {
			got, ok := reg.For("okx", test)
			require.False(t, ok)
			require.Nil(t, got)
		}
	})

	t.Run("GetIsTheLiveAccount", func(t *testing.T) {
		t.Parallel()
		got, ok := reg.Get("binance")
		require.True(t, ok)
		require.Same(t, binanceLive, got)
	})

	t.Run("DescribeSaysWhichVenuesHaveATestnetAccount", func(t *testing.T) {
		t.Parallel()
		has := map[string]bool{}
		for _, s := range reg.Describe() {
			has[s.Name] = s.HasTestnet
		}
		require.Equal(t, map[string]bool{exchange.PaperName: false, "binance": true, "bybit": false}, has)
	})
}

// Without paper in the registry, a test signal for a venue with no testnet
// account has nowhere to go: it is refused rather than sent live.
func TestRegistryForNeverSendsATestSignalLive(t *testing.T) {
	t.Parallel()
	live := newFakeVenue()
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "binance", Live: live})
	got, ok := reg.For("binance", true)
	require.False(t, ok)
	require.Nil(t, got)

	got, ok = reg.For("binance", false)
	require.True(t, ok)
	require.Same(t, live, got)
}
