package exchange_test

import (
	"errors"
	"testing"
	"time"

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

// An account's errors are noted under the key its signal reached the
// venue with (KeyName): the testnet pair's apart from the live key's, a
// test signal paper took under paper. The page shows both; the error
// count stays by account.
func TestRegistryNotesEachKeysErrorsApart(t *testing.T) {
	t.Parallel()
	reg := exchange.NewRegistryOf(
		exchange.Entry{Name: exchange.PaperName, Live: newFakeVenue()},
		exchange.Entry{Name: "binance", Live: newFakeVenue(), Test: newFakeVenue()},
		exchange.Entry{Name: "bybit", Live: newFakeVenue()},
	)
	require.Equal(t, "binance", reg.KeyName("binance", false))
	require.Equal(t, "binance"+exchange.TestnetSuffix, reg.KeyName("binance", true))
	require.Equal(t, "bybit", reg.KeyName("bybit", false))
	require.Equal(t, exchange.PaperName, reg.KeyName("bybit", true), "paper takes bybit's test signals")
	require.Equal(t, exchange.PaperName, reg.KeyName(exchange.PaperName, true))

	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	reg.NoteError(reg.KeyName("binance", true), errors.New("testnet key refused"), at)
	byName := func() map[string]exchange.VenueStatus {
		out := map[string]exchange.VenueStatus{}
		for _, s := range reg.Describe() {
			out[s.Name] = s
		}
		return out
	}
	binance := byName()["binance"]
	require.Nil(t, binance.LastError, "the testnet key's error is not the live key's")
	require.NotNil(t, binance.TestnetLastError)
	require.Equal(t, "testnet key refused", binance.TestnetLastError.Message)

	reg.NoteError(reg.KeyName("binance", false), errors.New("live key refused"), at)
	binance = byName()["binance"]
	require.Equal(t, "live key refused", binance.LastError.Message)
	require.Equal(t, "testnet key refused", binance.TestnetLastError.Message)
	require.Equal(t, map[string]uint64{exchange.PaperName: 0, "binance": 2, "bybit": 0}, reg.ErrorCounts())
}
