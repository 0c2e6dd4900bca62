package okx

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Market selects which OKX instrument type a Venue trades. Spot and
// perpetual swaps share one account (the unified trading account), but
// not their books, order sizes or rules.
type Market string

// The markets a Venue can trade.
const (
	// MarketSpot is instType SPOT, traded in cash mode (tdMode cash): a
	// close sells the free base-currency balance.
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
	if c.BaseURL == "" {
		c.BaseURL = BaseURL
		if c.Testnet {
			c.BaseURL = TestnetBaseURL
		}
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Expiry == 0 {
		c.Expiry = DefaultExpiry
	}
	if c.LookupLag == 0 {
		c.LookupLag = DefaultLookupLag
	}
	if c.ClockMargin == 0 {
		c.ClockMargin = DefaultClockMargin
	}
	if c.TimeSync == 0 {
		c.TimeSync = DefaultTimeSync
	}
	if c.FilterTTL == 0 {
		c.FilterTTL = DefaultFilterTTL
	}
	if c.ConfirmWait == 0 {
		c.ConfirmWait = DefaultConfirmWait
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// validate joins every setting that cannot work.
func (c Config) validate() error {
	var errs []error
	if c.Market != MarketSpot && c.Market != MarketSwap {
		errs = append(errs, fmt.Errorf("market %q is not %q or %q", c.Market, MarketSpot, MarketSwap))
	}
	if c.APIKey == "" {
		errs = append(errs, errors.New("api key is empty"))
	}
	if c.APISecret == "" {
		errs = append(errs, errors.New("api secret is empty"))
	}
	if c.Passphrase == "" {
		errs = append(errs, errors.New("api passphrase is empty"))
	}
	if c.Expiry < time.Millisecond {
		errs = append(errs, fmt.Errorf("expiry %s is below 1ms", c.Expiry))
	}
	if c.LookupLag < 0 || c.ClockMargin < 0 || c.TimeSync < 0 || c.FilterTTL < 0 || c.ConfirmWait < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		errs = append(errs, fmt.Errorf("base url %q is not http(s)", c.BaseURL))
	}
	return errors.Join(errs...)
}

// LogValue keeps the credentials out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("market", string(c.Market)),
		slog.String("base_url", c.BaseURL),
		slog.Bool("testnet", c.Testnet),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Duration("expiry", c.Expiry),
	)
}
