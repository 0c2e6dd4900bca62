package app

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/bybit"
)

// VenueSettings configure one real venue (HOOX_<VENUE>_* in cmd/hoox). A
// venue is configured when its API key pair is set; its testnet pair, when
// set, receives the test signals.
type VenueSettings struct {
	APIKey, APISecret               string
	BaseURL                         string
	Testnet                         bool
	TestnetAPIKey, TestnetAPISecret string
}

// VenueKind is one venue hoox can trade on: its exchange name, the infix of
// its settings' names and how to build its adapter.
type VenueKind struct {
	// Name is what a signal's exchange field says.
	Name string
	// Env is the infix of the venue's variables: HOOX_<Env>_API_KEY, …
	Env   string
	build func(key, secret, baseURL string, testnet bool, now func() time.Time, log *slog.Logger) (exchange.Venue, error)
	// testnetURL is the venue's testnet, where test signals go.
	testnetURL string
}

// Build returns the kind's adapter for a key pair at baseURL ("" = the
// venue's production URL, or its testnet URL with testnet).
func (k VenueKind) Build(key, secret, baseURL string, testnet bool, log *slog.Logger) (exchange.Venue, error) {
	return k.build(key, secret, baseURL, testnet, nil, log)
}

// VenueKinds is every real venue, in Config.Venues' order (and the order
// --help lists them).
func VenueKinds() []VenueKind {
	return []VenueKind{
		{Name: "binance", Env: "BINANCE", testnetURL: binance.SpotTestnetBaseURL, build: buildBinance(binance.MarketSpot)},
		{Name: "binance-futures", Env: "BINANCE_FUTURES", testnetURL: binance.FuturesTestnetBaseURL, build: buildBinance(binance.MarketFutures)},
		{Name: "bybit", Env: "BYBIT", testnetURL: bybit.TestnetURL, build: buildBybit(bybit.Linear)},
		{Name: "bybit-spot", Env: "BYBIT_SPOT", testnetURL: bybit.TestnetURL, build: buildBybit(bybit.Spot)},
	}
}

func buildBinance(m binance.Market) func(string, string, string, bool, func() time.Time, *slog.Logger) (exchange.Venue, error) {
	return func(key, secret, baseURL string, testnet bool, now func() time.Time, log *slog.Logger) (exchange.Venue, error) {
		return binance.New(binance.Config{Market: m, APIKey: key, APISecret: secret, BaseURL: baseURL, Testnet: testnet, Now: now, Logger: log})
	}
}

func buildBybit(c bybit.Category) func(string, string, string, bool, func() time.Time, *slog.Logger) (exchange.Venue, error) {
	return func(key, secret, baseURL string, testnet bool, now func() time.Time, log *slog.Logger) (exchange.Venue, error) {
		if baseURL == "" && testnet {
			baseURL = bybit.TestnetURL
		}
		return bybit.New(bybit.Config{Category: c, APIKey: key, APISecret: secret, BaseURL: baseURL, Now: now, Logger: log})
	}
}

// checkVenues refuses half a key pair, naming the missing variable.
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
	for i, k := range VenueKinds() {
		v := c.Venues[i]
		env := "HOOX_" + k.Env
		pair(v.APIKey, v.APISecret, env+"_API_KEY", env+"_API_SECRET")
		pair(v.TestnetAPIKey, v.TestnetAPISecret, env+"_TESTNET_API_KEY", env+"_TESTNET_API_SECRET")
		if v.TestnetAPIKey != "" && v.APIKey == "" {
			refused = append(refused, fmt.Sprintf("%s_TESTNET_API_KEY is set but %s_API_KEY is not: configure the venue's live (or testnet) pair first", env, env))
		}
	}
	return refused
}

// venueEntries builds the registry entries of every configured venue.
func (c *Config) venueEntries(log *slog.Logger) ([]exchange.Entry, error) {
	var out []exchange.Entry
	for i, k := range VenueKinds() {
		v := c.Venues[i]
		if v.APIKey == "" {
			continue
		}
		vlog := log.With("exchange", k.Name)
		live, err := k.build(v.APIKey, v.APISecret, v.BaseURL, v.Testnet, c.clock(), vlog)
		if err != nil {
			return nil, fmt.Errorf("HOOX_%s: %w", k.Env, err)
		}
		e := exchange.Entry{Name: k.Name, Live: live, Testnet: v.Testnet, BaseURL: v.BaseURL}
		if e.BaseURL == "" {
			e.BaseURL = "(production)"
			if v.Testnet {
				e.BaseURL = k.testnetURL
			}
		}
		if v.TestnetAPIKey != "" {
			if e.Test, err = k.build(v.TestnetAPIKey, v.TestnetAPISecret, k.testnetURL, true, c.clock(), vlog.With("testnet", true)); err != nil {
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
