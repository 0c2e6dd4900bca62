package binance

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Market selects which Binance API a Venue trades on. Spot and USDⓈ-M
// futures are separate accounts with separate books, endpoints and rules.
type Market string

// The markets a Venue can trade.
const (
	// MarketSpot is Binance spot, /api/v3.
	MarketSpot Market = "spot"
	// MarketFutures is Binance USDⓈ-M futures, /fapi/v1, one-way position
	// mode.
	MarketFutures Market = "futures"
)

// Base URLs Binance publishes for each market; Config.BaseURL defaults to
// them.
const (
	SpotBaseURL           = "https://api.binance.com"
	SpotTestnetBaseURL    = "https://testnet.binance.vision"
	FuturesBaseURL        = "https://fapi.binance.com"
	FuturesTestnetBaseURL = "https://testnet.binancefuture.com"
)

// Defaults for Config fields left zero.
const (
	// DefaultRecvWindow is Binance's own default request validity.
	DefaultRecvWindow = 5 * time.Second
	// MaxRecvWindow is the largest recvWindow Binance accepts.
	MaxRecvWindow = 60 * time.Second
	// DefaultLookupLag is how long after acceptance an order may take to
	// show in the order query (Binance's query reads "Memory => Database").
	DefaultLookupLag = 10 * time.Second
	// DefaultClockMargin covers the error of the server-time offset and
	// Binance's one second of tolerance for timestamps ahead of its clock.
	DefaultClockMargin = 2 * time.Second
	// DefaultTimeSync is how often the server-time offset is refreshed.
	DefaultTimeSync = 10 * time.Minute
	// DefaultFilterTTL is how long a symbol's filters are trusted.
	DefaultFilterTTL = time.Hour
	// DefaultHTTPTimeout bounds one request when Config.HTTPClient is nil;
	// Binance itself answers -1007 after 10 s.
	DefaultHTTPTimeout = 15 * time.Second
	// DefaultConfirmWait bounds how long Place keeps asking for the final
	// state of a market order Binance answered NEW or PARTIALLY_FILLED:
	// well inside the gateway's venue timeout (10 s by default), which
	// the reads before the order and the order itself share.
	DefaultConfirmWait = 2 * time.Second
	// DefaultSpotWeightBudget and DefaultFuturesWeightBudget keep a margin
	// under Binance's 6000 (spot) and 2400 (futures) weight per minute.
	DefaultSpotWeightBudget    = 5000
	DefaultFuturesWeightBudget = 2000
)

// Config configures a Venue. The zero value of every field but the
// credentials and Market is a usable default (see WithDefaults).
type Config struct {
	// Market is spot or futures.
	Market Market
	// APIKey and APISecret are an HMAC API key pair. Both are required;
	// neither is ever logged.
	APIKey    string
	APISecret string
	// BaseURL is where requests go; the market's production URL, or its
	// testnet URL when Testnet is set.
	BaseURL string
	// Testnet picks the testnet URL when BaseURL is empty.
	Testnet bool
	// HTTPClient sends the requests; a client with DefaultHTTPTimeout when
	// nil.
	HTTPClient *http.Client
	// Now is the local clock; time.Now when nil.
	Now func() time.Time
	// RecvWindow is how long Binance may still accept a request after its
	// timestamp; DefaultRecvWindow when zero, at most MaxRecvWindow.
	RecvWindow time.Duration
	// LookupLag and ClockMargin add to RecvWindow in AcceptWindow.
	LookupLag   time.Duration
	ClockMargin time.Duration
	// TimeSync is how often the server-time offset is refreshed; it is
	// also refreshed after every -1021.
	TimeSync time.Duration
	// FilterTTL is how long cached filters are used before exchangeInfo is
	// read again; a filter failure drops them at once.
	FilterTTL time.Duration
	// WeightBudget is the request weight per minute the venue lets itself
	// use, read back from X-MBX-USED-WEIGHT-1M; past it, requests wait for
	// the next minute (or fail with ErrUnreachable when the context ends
	// first). Defaults per market.
	WeightBudget int
	// ConfirmWait is how long Place keeps querying a market order that
	// Binance answered as not yet final (NEW, PARTIALLY_FILLED) before it
	// gives up with ErrUnknownOutcome for the gateway to reconcile; the
	// caller's deadline bounds it too.
	ConfirmWait time.Duration
	// Logger receives operator-facing messages; slog.Default() when nil.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Market == "" {
		c.Market = MarketSpot
	}
	if c.BaseURL == "" {
		switch {
		case c.Market == MarketFutures && c.Testnet:
			c.BaseURL = FuturesTestnetBaseURL
		case c.Market == MarketFutures:
			c.BaseURL = FuturesBaseURL
		case c.Testnet:
			c.BaseURL = SpotTestnetBaseURL
		default:
			c.BaseURL = SpotBaseURL
		}
	}
	c.settings().Apply(venuekit.Defaults{HTTPTimeout: DefaultHTTPTimeout, Window: DefaultRecvWindow, LookupLag: DefaultLookupLag,
		ClockMargin: DefaultClockMargin, TimeSync: DefaultTimeSync, FilterTTL: DefaultFilterTTL, ConfirmWait: DefaultConfirmWait}, c.Testnet)
	if c.WeightBudget == 0 {
		c.WeightBudget = DefaultSpotWeightBudget
		if c.Market == MarketFutures {
			c.WeightBudget = DefaultFuturesWeightBudget
		}
	}
	return c
}

// validate reports the first setting that cannot work, naming it.
func (c Config) validate() error {
	switch {
	case c.Market != MarketSpot && c.Market != MarketFutures:
		return fmt.Errorf("binance: market %q: want %q or %q", c.Market, MarketSpot, MarketFutures)
	case c.APIKey == "" && c.APISecret != "":
		return errors.New("binance: api secret set without api key")
	case c.APIKey != "" && c.APISecret == "":
		return errors.New("binance: api key set without api secret")
	case c.APIKey == "":
		return errors.New("binance: api key and secret are required")
	case c.RecvWindow < time.Millisecond || c.RecvWindow > MaxRecvWindow:
		return fmt.Errorf("binance: recv window %s: want 1ms to %s", c.RecvWindow, MaxRecvWindow)
	case c.settings().Negative():
		return errors.New("binance: durations must not be negative")
	case c.WeightBudget < 0:
		return errors.New("binance: weight budget must not be negative")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("binance: base url %q: want http(s)://host", exchange.RedactURL(c.BaseURL))
	}
	return nil
}

// settings hands venuekit the fields every venue's Config shares.
func (c *Config) settings() venuekit.Settings {
	return venuekit.Settings{BaseURL: &c.BaseURL, HTTPClient: &c.HTTPClient, Now: &c.Now, Window: &c.RecvWindow, LookupLag: &c.LookupLag,
		ClockMargin: &c.ClockMargin, TimeSync: &c.TimeSync, FilterTTL: &c.FilterTTL, Confirm: &c.ConfirmWait, Logger: &c.Logger}
}

// LogValue keeps the credentials out of logs: the key shows only as set,
// the secret not at all.
func (c Config) LogValue() slog.Value {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return slog.GroupValue(
		slog.String("market", string(c.Market)),
		slog.String("base_url", exchange.RedactURL(c.BaseURL)),
		slog.String("api_key", key),
		slog.Duration("recv_window", c.RecvWindow),
	)
}
