package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/bybit"
)

// VenueSettings configure one real venue from HOOX_<VENUE>_* variables.
// A venue is configured when its API key pair is set; its testnet pair, when
// set, receives the test signals.
type VenueSettings struct {
	APIKey, APISecret               string
	BaseURL                         string
	Testnet                         bool
	TestnetAPIKey, TestnetAPISecret string
}

// venueKind is one venue hoox can trade on: its exchange name, the
// variables' infix and how to build its adapter.
type venueKind struct {
	name string // what a signal's exchange field says
	env  string // HOOX_<env>_API_KEY, …
	// build returns the adapter for a key pair at baseURL ("" = the
	// venue's production URL, or its testnet URL with testnet).
	build func(key, secret, baseURL string, testnet bool, log *slog.Logger) (exchange.Venue, error)
	// testnetURL is the venue's testnet, where test signals go.
	testnetURL string
}

// venueKinds is every real venue, in the order --help lists them.
var venueKinds = []venueKind{
	{name: "binance", env: "BINANCE", testnetURL: binance.SpotTestnetBaseURL, build: buildBinance(binance.MarketSpot)},
	{name: "binance-futures", env: "BINANCE_FUTURES", testnetURL: binance.FuturesTestnetBaseURL, build: buildBinance(binance.MarketFutures)},
	{name: "bybit", env: "BYBIT", testnetURL: bybit.TestnetURL, build: buildBybit(bybit.Linear)},
	{name: "bybit-spot", env: "BYBIT_SPOT", testnetURL: bybit.TestnetURL, build: buildBybit(bybit.Spot)},
}

func buildBinance(m binance.Market) func(string, string, string, bool, *slog.Logger) (exchange.Venue, error) {
	return func(key, secret, baseURL string, testnet bool, log *slog.Logger) (exchange.Venue, error) {
		return binance.New(binance.Config{Market: m, APIKey: key, APISecret: secret, BaseURL: baseURL, Testnet: testnet, Logger: log})
	}
}

func buildBybit(c bybit.Category) func(string, string, string, bool, *slog.Logger) (exchange.Venue, error) {
	return func(key, secret, baseURL string, testnet bool, log *slog.Logger) (exchange.Venue, error) {
		if baseURL == "" && testnet {
			baseURL = bybit.TestnetURL
		}
		return bybit.New(bybit.Config{Category: c, APIKey: key, APISecret: secret, BaseURL: baseURL, Logger: log})
	}
}

// venueOptions are the six settings of every venue kind.
func (c *Config) venueOptions() []option {
	var out []option
	for i, k := range venueKinds {
		v := &c.Venues[i]
		flag := strings.ToLower(strings.ReplaceAll(k.env, "_", "-"))
		env := "HOOX_" + k.env
		out = append(out,
			option{flag + "-api-key", env + "_API_KEY", k.name + " API key (live, or testnet with " + env + "_TESTNET)", secretValue{&v.APIKey}, ""},
			option{flag + "-api-secret", env + "_API_SECRET", k.name + " API secret", secretValue{&v.APISecret}, ""},
			option{flag + "-base-url", env + "_BASE_URL", k.name + " base URL (default: the venue's production URL)", stringValue{&v.BaseURL}, ""},
			option{flag + "-testnet", env + "_TESTNET", "send " + k.name + "'s live signals to its testnet", boolValue{&v.Testnet}, ""},
			option{flag + "-testnet-api-key", env + "_TESTNET_API_KEY", k.name + " testnet API key: test signals go there (else to paper)", secretValue{&v.TestnetAPIKey}, ""},
			option{flag + "-testnet-api-secret", env + "_TESTNET_API_SECRET", k.name + " testnet API secret", secretValue{&v.TestnetAPISecret}, ""},
		)
	}
	return out
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
	for i, k := range venueKinds {
		v := c.Venues[i]
		env := "HOOX_" + k.env
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
	for i, k := range venueKinds {
		v := c.Venues[i]
		if v.APIKey == "" {
			continue
		}
		vlog := log.With("exchange", k.name)
		live, err := k.build(v.APIKey, v.APISecret, v.BaseURL, v.Testnet, vlog)
		if err != nil {
			return nil, fmt.Errorf("HOOX_%s: %w", k.env, err)
		}
		e := exchange.Entry{Name: k.name, Live: live, Testnet: v.Testnet, BaseURL: v.BaseURL}
		if e.BaseURL == "" {
			e.BaseURL = "(production)"
			if v.Testnet {
				e.BaseURL = k.testnetURL
			}
		}
		if v.TestnetAPIKey != "" {
			if e.Test, err = k.build(v.TestnetAPIKey, v.TestnetAPISecret, k.testnetURL, true, vlog.With("testnet", true)); err != nil {
				return nil, fmt.Errorf("HOOX_%s_TESTNET: %w", k.env, err)
			}
		}
		vlog.Info("venue configured", "testnet", v.Testnet, "testnet_account", v.TestnetAPIKey != "", "api_key", "set")
		out = append(out, e)
	}
	return out, nil
}
