package app

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/venues"
)

// A venue's HOOX_<VENUE>_TESTNET_API_KEY/_SECRET pair becomes the account
// its test signals trade on; without the pair they go to paper. Nothing is
// sent while the venues are built.
func TestVenueEntriesTestnetPairReceivesTestSignals(t *testing.T) {
	t.Parallel()
	for i, k := range venues.All() {
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			cfg := DefaultConfig()
			cfg.Venues[i] = VenueSettings{APIKey: "live-key", APISecret: "live-secret", BaseURL: "http://127.0.0.1:1",
				TestnetAPIKey: "testnet-key", TestnetAPISecret: "testnet-secret"}
			if k.Passphrase {
				cfg.Venues[i].APIPassphrase, cfg.Venues[i].TestnetAPIPassphrase = "live-pass", "testnet-pass"
			}
			withPair := cfg
			withoutPair := cfg
			withoutPair.Venues = slices.Clone(cfg.Venues)
			withoutPair.Venues[i].TestnetAPIKey, withoutPair.Venues[i].TestnetAPISecret = "", ""
			log := slog.New(slog.NewTextHandler(io.Discard, nil))

			entries, err := withPair.venueEntries(log)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.Equal(t, k.Name, entries[0].Name)
			require.NotNil(t, entries[0].Test, "test signals trade on the testnet account")
			require.NotSame(t, entries[0].Live, entries[0].Test, "never on the live one")

			entries, err = withoutPair.venueEntries(log)
			require.NoError(t, err)
			require.Len(t, entries, 1)
			require.Nil(t, entries[0].Test, "without a testnet pair test signals go to paper")
		})
	}
}

// A venue whose keys come with a passphrase (OKX) refuses a key without
// it at start, naming the variable; the other venues have no such
// variable to miss.
func TestVenuePassphraseIsRequiredWhereKeysHaveOne(t *testing.T) {
	t.Parallel()
	for _, k := range venues.All() {
		cfg := DefaultConfig()
		*cfg.Venue(k.Name) = VenueSettings{APIKey: "key", APISecret: "secret"}
		refused := cfg.checkVenues()
		if !k.Passphrase {
			require.Empty(t, refused, k.Name)
			continue
		}
		require.Len(t, refused, 1, k.Name)
		require.Contains(t, refused[0], "HOOX_"+k.Env+"_API_PASSPHRASE")
		cfg.Venue(k.Name).APIPassphrase = "pass"
		require.Empty(t, cfg.checkVenues(), k.Name)
	}
}
