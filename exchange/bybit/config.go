package bybit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// Base URLs Bybit publishes for its v5 REST API (one host for every
// category); Config.BaseURL defaults to them.
const (
	BaseURL        = "https://api.bybit.com"
	TestnetBaseURL = "https://api-testnet.bybit.com"
)

// Category is the Bybit v5 product category a Venue trades.
type Market string

// The categories this adapter supports.
const (
	// Linear is USDT perpetuals: positions, reduce-only closes, leverage.
	MarketLinear Market = "linear"
	// Spot is spot trading in the unified account: close sells the free
	// base-coin balance; leverage is ignored.
	MarketSpot Market = "spot"
)

// Defaults for Config fields left zero.
const (
	DefaultRecvWindow  = 5 * time.Second
	DefaultLookupLag   = 10 * time.Second
	DefaultClockMargin = 2 * time.Second
	DefaultTimeSync    = 30 * time.Minute
	DefaultFilterTTL   = time.Hour
	DefaultHTTPTimeout = 30 * time.Second
	// DefaultConfirmWait bounds how long Place keeps asking for an
	// acknowledged order's state: well inside the gateway's venue
	// timeout (10 s by default), which the pre-calls and the create share.
	DefaultConfirmWait = 2 * time.Second
	// DefaultHistoryLookback is how far back (by the order's creation
	// time) Lookup searches order history when realtime and history's
	// default last 7 days do not hold the order: 13 weeks, as long as hoox
	// follows an order (an exit for jobs.FollowExitHorizon plus its grace,
	// 83 days; an entry while its trace is kept, HOOX_TRACE_TTL). Realtime
	// lists a closed order only among the account's latest 500 and not at
	// all after a Bybit release (open-order.mdx), so a limit order that
	// rested for weeks and then filled may be only in history, in the
	// 7-day window of its creation; an order not found there is followed
	// for ever as "venue not asked". Twelve more queries when nothing is
	// found.
	DefaultHistoryLookback = 13 * 7 * 24 * time.Hour
	// historySpan is the longest span one history query may cover
	// (order-list.mdx: "endTime - startTime <= 7 days").
	historySpan = 7 * 24 * time.Hour
	// DefaultIPBanWait is how long Bybit says to back off after HTTP 403
	// "access too frequent" (its rate-limit page: at least 10 minutes).
	DefaultIPBanWait = 10 * time.Minute
)

// Config configures a Venue. Zero fields take the defaults above
// (WithDefaults); APIKey and APISecret are required.
type Config struct {
	// Category is linear (default) or spot.
	Market Market
	// APIKey and APISecret are a Bybit HMAC API key pair. The secret is
	// never logged; the key is logged only as "set".
	APIKey    string
	APISecret string
	// BaseURL is where requests go: BaseURL by default, TestnetBaseURL
	// with Testnet, a fake's URL in tests.
	BaseURL string
	// Testnet picks TestnetBaseURL when BaseURL is empty.
	Testnet bool
	// HTTPClient sends the requests; a client with DefaultHTTPTimeout when
	// nil. The gateway bounds each call with its context as well.
	HTTPClient *http.Client
	// Now is the local clock; time.Now when nil.
	Now func() time.Time
	// RecvWindow is X-BAPI-RECV-WINDOW: how long after its timestamp Bybit
	// still accepts a request (whole milliseconds).
	RecvWindow time.Duration
	// LookupLag is how long Bybit's order queries may trail an accepted
	// order; part of AcceptWindow.
	LookupLag time.Duration
	// ClockMargin covers the error in the server-time offset; part of
	// AcceptWindow.
	ClockMargin time.Duration
	// TimeSyncInterval is how often the server-time offset is refreshed.
	TimeSync time.Duration
	// FilterTTL is how long a symbol's filters are trusted.
	FilterTTL time.Duration
	// ConfirmWait is how long Place keeps querying realtime and history
	// for the state of an order Bybit acknowledged (the create answer says
	// nothing more) before it gives up with ErrUnknownOutcome; the
	// caller's deadline bounds it too.
	ConfirmWait time.Duration
	// HistoryLookback is how far back (from now, on Bybit's clock) Lookup
	// searches order history, 7 days per query, once history's default
	// last 7 days do not hold the order. Bybit keeps filled orders for
	// two years, unfilled cancelled ones only a day. It must cover the
	// oldest order hoox still follows (DefaultHistoryLookback).
	HistoryLookback time.Duration
	// Logger receives the adapter's logs; slog.Default when nil.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Market == "" {
		c.Market = MarketLinear
	}
	c.settings().Apply(venuekit.Defaults{BaseURL: BaseURL, TestnetBaseURL: TestnetBaseURL, HTTPTimeout: DefaultHTTPTimeout,
		Window: DefaultRecvWindow, LookupLag: DefaultLookupLag, ClockMargin: DefaultClockMargin, TimeSync: DefaultTimeSync,
		FilterTTL: DefaultFilterTTL, ConfirmWait: DefaultConfirmWait}, c.Testnet)
	if c.HistoryLookback == 0 {
		c.HistoryLookback = DefaultHistoryLookback
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Market != MarketLinear && c.Market != MarketSpot {
		errs = append(errs, fmt.Errorf("market (bybit category) %q is not %q or %q", c.Market, MarketLinear, MarketSpot))
	}
	errs = append(errs, venuekit.Empty([2]string{"api key", c.APIKey}, [2]string{"api secret", c.APISecret})...)
	if c.RecvWindow < time.Millisecond || c.RecvWindow%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("recv window %s is not a positive whole number of milliseconds", c.RecvWindow))
	}
	errs = append(errs, c.settings().Check(c.HistoryLookback)...)
	return errors.Join(errs...)
}

// settings hands venuekit the fields every venue's Config shares.
func (c *Config) settings() venuekit.Settings {
	return venuekit.Settings{BaseURL: &c.BaseURL, HTTPClient: &c.HTTPClient, Now: &c.Now, Window: &c.RecvWindow, LookupLag: &c.LookupLag,
		ClockMargin: &c.ClockMargin, TimeSync: &c.TimeSync, FilterTTL: &c.FilterTTL, Confirm: &c.ConfirmWait, Logger: &c.Logger}
}

// LogValue shows the configuration without its secret (and the key only as
// set or not), so a Config can be logged whole.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("category", string(c.Market)),
		slog.String("base_url", exchange.RedactURL(c.BaseURL)),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Bool("api_secret_set", c.APISecret != ""),
		slog.Duration("recv_window", c.RecvWindow),
	)
}
