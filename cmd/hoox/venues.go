package main

import (
	"strings"

	"github.com/hoox/hoox/exchange/venues"
	"github.com/hoox/hoox/internal/app"
)

// venueOptions are the settings of every venue in the registry,
// HOOX_<VENUE>_*: six for each, eight for a venue whose keys have a
// passphrase.
func venueOptions(c *Config) []option {
	all := venues.All()
	for len(c.Venues) < len(all) {
		c.Venues = append(c.Venues, app.VenueSettings{})
	}
	var out []option
	for i, k := range all {
		v := &c.Venues[i]
		flag := strings.ToLower(strings.ReplaceAll(k.Env, "_", "-"))
		env := "HOOX_" + k.Env
		out = append(out,
			option{flag + "-api-key", env + "_API_KEY", k.Name + " API key (live, or testnet with " + env + "_TESTNET)", secretValue{&v.APIKey}, ""},
			option{flag + "-api-secret", env + "_API_SECRET", k.Name + " API secret", secretValue{&v.APISecret}, ""})
		if k.Passphrase {
			out = append(out, option{flag + "-api-passphrase", env + "_API_PASSPHRASE", k.Name + " API key passphrase (required with the key)", secretValue{&v.APIPassphrase}, ""})
		}
		out = append(out,
			option{flag + "-base-url", env + "_BASE_URL", k.Name + " base URL (default: the venue's production URL)", stringValue{&v.BaseURL}, ""},
			option{flag + "-testnet", env + "_TESTNET", "send " + k.Name + "'s live signals to its testnet", boolValue{&v.Testnet}, ""},
			option{flag + "-testnet-api-key", env + "_TESTNET_API_KEY", k.Name + " testnet API key: test signals go there (else to paper)", secretValue{&v.TestnetAPIKey}, ""},
			option{flag + "-testnet-api-secret", env + "_TESTNET_API_SECRET", k.Name + " testnet API secret", secretValue{&v.TestnetAPISecret}, ""},
		)
		if k.Passphrase {
			out = append(out, option{flag + "-testnet-api-passphrase", env + "_TESTNET_API_PASSPHRASE", k.Name + " testnet API key passphrase", secretValue{&v.TestnetAPIPassphrase}, ""})
		}
	}
	return out
}
