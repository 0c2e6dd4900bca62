package okx

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Market selects which OKX instrument type a Venue trades. Spot and
// perpetual swaps share one account (the unified trading account), but
// not their books, order sizes or rules.
type Market string

// The markets a Venue can trade.
const (
	// MarketSpot is instType SPOT, traded in cash mode (tdMode cash): a
	// close sells what the strategy bought through hoox (sized by the
	// gateway from the spot ledger), at most the free base currency.
	MarketSpot Market = "spot"
	// MarketSwap is instType SWAP, USDT-margined perpetual swaps
	// (instId BTC-USDT-SWAP), cross margin, net (one-way) position mode.
	// Sizes are in contracts on the wire; the adapter converts to and
	// from the base currency with the instrument's ctVal.
	MarketSwap Market = "swap"
)

// BaseURL is OKX's REST host. Demo trading uses the same paths with the
// x-simulated-trading: 1 header (Config.Testnet) at TestnetBaseURL.
const (
	BaseURL        = "https://www.okx.com"
	TestnetBaseURL = "https://www.okx.com"
)

// Defaults for Config fields left zero.
const (
	// DefaultExpiry is how long after its stamp an order may still be
	// processed: sent as the expTime header, after which OKX does not
	// process it.
	DefaultExpiry = 5 * time.Second
	// DefaultLookupLag is how long the order query may trail an accepted
	// order.
	DefaultLookupLag = 10 * time.Second
	// DefaultClockMargin covers the error of the server-time offset.
	DefaultClockMargin  = 2 * time.Second
	DefaultTimeSync     = 10 * time.Minute
	DefaultFilterTTL    = time.Hour
	DefaultHTTPTimeout  = 15 * time.Second
	DefaultConfirmWait  = 2 * time.Second
	DefaultRateLimitGap = time.Second
)

// Config configures a Venue. APIKey, APISecret and Passphrase are
// required; every other zero field takes its default (WithDefaults).
type Config struct {
	// Market is spot (default) or swap.
	Market Market
	// APIKey, APISecret and Passphrase are an OKX API key, its secret and
	// the passphrase chosen when the key was created. None is logged.
	APIKey, APISecret, Passphrase string
	// BaseURL is where requests go: BaseURL by default, a fake's URL in
	// tests.
	BaseURL string
	// Testnet sends every request to OKX's demo trading (the
	// x-simulated-trading: 1 header; demo keys are separate keys).
	Testnet bool
	// HTTPClient sends the requests; a client with DefaultHTTPTimeout when
	// nil.
	HTTPClient *http.Client
	// Now is the local clock; time.Now when nil.
	Now func() time.Time
	// Expiry is how long after the order's stamp OKX may still process it
	// (the expTime header).
	Expiry time.Duration
	// LookupLag and ClockMargin add to Expiry in AcceptWindow.
	LookupLag, ClockMargin time.Duration
	// TimeSync is how often the server-time offset is refreshed.
	TimeSync time.Duration
	// FilterTTL is how long an instrument's rules are trusted.
	FilterTTL time.Duration
	// ConfirmWait is how long Place keeps querying a market order that is
	// not final before it answers ErrUnknownOutcome.
	ConfirmWait time.Duration
	// Logger receives operator-facing messages; slog.Default() when nil.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Market == "" {
		c.Market = MarketSpot
	}
	c.settings().Apply(venuekit.Defaults{BaseURL: BaseURL, TestnetBaseURL: TestnetBaseURL, HTTPTimeout: DefaultHTTPTimeout,
		Window: DefaultExpiry, LookupLag: DefaultLookupLag, ClockMargin: DefaultClockMargin, TimeSync: DefaultTimeSync,
		FilterTTL: DefaultFilterTTL, ConfirmWait: DefaultConfirmWait}, c.Testnet)
	return c
}

// validate joins every setting that cannot work.
func (c Config) validate() error {
	var errs []error
	if c.Market != MarketSpot && c.Market != MarketSwap {
		errs = append(errs, fmt.Errorf("market %q is not %q or %q", c.Market, MarketSpot, MarketSwap))
	}
	errs = append(errs, venuekit.Empty([2]string{"api key", c.APIKey}, [2]string{"api secret", c.APISecret},
		[2]string{"api passphrase", c.Passphrase})...)
	if c.Expiry < time.Millisecond {
		errs = append(errs, fmt.Errorf("expiry %s is below 1ms", c.Expiry))
	}
	errs = append(errs, c.settings().Check()...)
	return errors.Join(errs...)
}

// settings hands venuekit the fields every venue's Config shares.
func (c *Config) settings() venuekit.Settings {
	return venuekit.Settings{BaseURL: &c.BaseURL, HTTPClient: &c.HTTPClient, Now: &c.Now, Window: &c.Expiry, LookupLag: &c.LookupLag,
		ClockMargin: &c.ClockMargin, TimeSync: &c.TimeSync, FilterTTL: &c.FilterTTL, Confirm: &c.ConfirmWait, Logger: &c.Logger}
}

// LogValue keeps the credentials out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("market", string(c.Market)),
		slog.String("base_url", exchange.RedactURL(c.BaseURL)),
		slog.Bool("testnet", c.Testnet),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("expiry", c.Expiry),
	)
}
