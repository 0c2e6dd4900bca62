package app

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/venues"
)

// VenueSettings configure one real venue (HOOX_<VENUE>_* in cmd/hoox). A
// venue is configured when its API key pair is set; its testnet pair, when
// set, receives the test signals. The passphrases are for venues whose keys
// have one (venues.Kind.Passphrase).
type VenueSettings struct {
	APIKey, APISecret, APIPassphrase                      string
	BaseURL                                               string
	Testnet                                               bool
	TestnetAPIKey, TestnetAPISecret, TestnetAPIPassphrase string
}

// NewVenueSettings returns empty settings for every venue in the registry,
// in venues.All()'s order: Config.Venues' shape.
func NewVenueSettings() []VenueSettings {
	return make([]VenueSettings, len(venues.All()))
}

// Venue returns the settings of the venue named name, or nil when the
// registry has no such venue.
func (c *Config) Venue(name string) *VenueSettings {
	for i, k := range venues.All() {
		if k.Name == name && i < len(c.Venues) {
			return &c.Venues[i]
		}
	}
	return nil
}

// venueAt is the settings of the i-th venue; zero when Config.Venues is
// shorter (a Config built without DefaultConfig).
func (c *Config) venueAt(i int) VenueSettings {
	if i < len(c.Venues) {
		return c.Venues[i]
	}
	return VenueSettings{}
}

// checkVenues refuses half a key pair (or a key without the passphrase
// its venue requires), naming the missing variable.
func (c *Config) checkVenues() []string {
	var refused []string
	pair := func(key, secret, keyVar, secretVar string) {
		switch {
		case key != "" && secret == "":
			refused = append(refused, fmt.Sprintf("%s is set but %s is not: a venue needs both", keyVar, secretVar))
		case key == "" && secret != "":
			refused = append(refused, fmt.Sprintf("%s is set but %s is not: a venue needs both", secretVar, keyVar))
		}
	}
	if len(c.Venues) > len(venues.All()) {
		refused = append(refused, fmt.Sprintf("%d venue settings for %d venues", len(c.Venues), len(venues.All())))
	}
	for i, k := range venues.All() {
		v := c.venueAt(i)
		env := "HOOX_" + k.Env
		pair(v.APIKey, v.APISecret, env+"_API_KEY", env+"_API_SECRET")
		pair(v.TestnetAPIKey, v.TestnetAPISecret, env+"_TESTNET_API_KEY", env+"_TESTNET_API_SECRET")
		if v.TestnetAPIKey != "" && v.APIKey == "" {
			refused = append(refused, fmt.Sprintf("%s_TESTNET_API_KEY is set but %s_API_KEY is not: configure the venue's live (or testnet) pair first", env, env))
		}
		if k.Passphrase {
			if v.APIKey != "" && v.APIPassphrase == "" {
				refused = append(refused, fmt.Sprintf("%s_API_KEY is set but %s_API_PASSPHRASE is not: %s keys come with a passphrase", env, env, k.Name))
			}
			if v.TestnetAPIKey != "" && v.TestnetAPIPassphrase == "" {
				refused = append(refused, fmt.Sprintf("%s_TESTNET_API_KEY is set but %s_TESTNET_API_PASSPHRASE is not: %s keys come with a passphrase", env, env, k.Name))
			}
		}
	}
	return refused
}

// venueEntries builds the registry entries of every configured venue.
func (c *Config) venueEntries(log *slog.Logger) ([]exchange.Entry, error) {
	var out []exchange.Entry
	for i, k := range venues.All() {
		v := c.venueAt(i)
		if v.APIKey == "" {
			continue
		}
		vlog := log.With("exchange", k.Name)
		live, err := k.New(venues.Settings{APIKey: v.APIKey, APISecret: v.APISecret, Passphrase: v.APIPassphrase,
			BaseURL: v.BaseURL, Testnet: v.Testnet, Now: c.clock(), Logger: vlog})
		if err != nil {
			return nil, fmt.Errorf("HOOX_%s: %w", k.Env, err)
		}
		e := exchange.Entry{Name: k.Name, Live: live, Testnet: v.Testnet, BaseURL: v.BaseURL}
		if e.BaseURL == "" {
			e.BaseURL = "(production)"
			if v.Testnet {
				e.BaseURL = k.TestnetURL
			}
		}
		if v.TestnetAPIKey != "" {
			e.Test, err = k.New(venues.Settings{APIKey: v.TestnetAPIKey, APISecret: v.TestnetAPISecret, Passphrase: v.TestnetAPIPassphrase,
				BaseURL: k.TestnetURL, Testnet: true, Now: c.clock(), Logger: vlog.With("testnet", true)})
			if err != nil {
				return nil, fmt.Errorf("HOOX_%s_TESTNET: %w", k.Env, err)
			}
		}
		vlog.Info("venue configured", "testnet", v.Testnet, "testnet_account", v.TestnetAPIKey != "", "api_key", "set")
		out = append(out, e)
	}
	return out, nil
}

// clock is this replica's clock, for the venue adapters, the gateway, the
// jobs and the webhook alike: nil (time.Now) unless the
// HOOX_DRILL_CLOCK_SKEW drill offsets it, as on a replica whose clock
// drifted from the venue's and from Postgres's.
func (c *Config) clock() func() time.Time {
	if c.ClockSkew == 0 {
		return nil
	}
	skew := c.ClockSkew
	return func() time.Time { return time.Now().Add(skew) }
}
