// Package bybit is hoox's adapter for Bybit's v5 REST API: one Venue serves
// category linear (USDT perpetuals, exchange name `bybit`) or category spot
// (`bybit-spot`), chosen by Config.Category.
//
// What it guarantees the gateway:
//   - Every private request is signed as Bybit documents (HMAC-SHA256, lower
//     hex, of timestamp + api_key + recv_window + payload; headers X-BAPI-*)
//     with a timestamp corrected by the offset to Bybit's server time, so a
//     drifting host clock does not get orders refused. An order carries the
//     time its Place started, not the time it is sent, so that it expires
//     within AcceptWindow of the gateway's intent.
//   - Orders carry the client order ID as orderLinkId, which Bybit keeps
//     unique for ever per category, and are found again by it in
//     /v5/order/realtime, then /v5/order/history.
//   - Every failure is classified by one table (ErrorTable) into the
//     exchange package's errors: nothing sent (ErrUnreachable, with
//     ErrCredentials for key problems), may exist (ErrUnknownOutcome),
//     duplicate (ErrDuplicateClientOrderID), or a rejected Report.
//   - Quantities are rounded down to the symbol's step and limit prices to
//     the tick on the passive side, and an order below the minimum quantity
//     or notional is rejected before anything is sent.
//
// Bybit's create-order answer is only an acknowledgement (orderId and
// orderLinkId; "this request is asynchronous"). Place therefore looks the
// order up right after, in realtime and then history (a filled or
// cancelled order may be only there), a few times within
// Config.ConfirmWait. A limit order is reported as soon as it is seen; a
// market order once its state is final. If that cannot be learnt, Place
// answers ErrUnknownOutcome, and the gateway's reconcile (Lookup) learns
// whether and at what price it filled.
//
// Linear positions are read in one-way mode (positionIdx 0); hedge mode is
// not supported. Spot ignores leverage.
package bybit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hoox/hoox/exchange"
)

// Base URLs Bybit publishes for its v5 REST API.
const (
	MainnetURL = "https://api.bybit.com"
	TestnetURL = "https://api-testnet.bybit.com"
)

// Category is the Bybit v5 product category a Venue trades.
type Category string

// The categories this adapter supports.
const (
	// Linear is USDT perpetuals: positions, reduce-only closes, leverage.
	Linear Category = "linear"
	// Spot is spot trading in the unified account: close sells the free
	// base-coin balance; leverage is ignored.
	Spot Category = "spot"
)

// Defaults for Config fields left zero.
const (
	DefaultRecvWindow       = 5 * time.Second
	DefaultLookupLag        = 10 * time.Second
	DefaultClockMargin      = 2 * time.Second
	DefaultTimeSyncInterval = 30 * time.Minute
	DefaultFilterTTL        = time.Hour
	DefaultHTTPTimeout      = 30 * time.Second
	// DefaultConfirmWait bounds how long Place keeps asking for an
	// acknowledged order's state: well inside the gateway's venue
	// timeout (10 s by default), which the pre-calls and the create share.
	DefaultConfirmWait = 2 * time.Second
	// DefaultHistoryLookback is how far back Lookup searches order history
	// when the last 7 days (history's default span) do not hold the
	// order: a reconcile runs within minutes of a placement, but one held
	// up by an outage must still find an order filled days ago.
	DefaultHistoryLookback = 30 * 24 * time.Hour
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
	Category Category
	// APIKey and APISecret are a Bybit HMAC API key pair. The secret is
	// never logged; the key is logged only as "set".
	APIKey    string
	APISecret string
	// BaseURL is MainnetURL by default; TestnetURL for testnet; a fake's
	// URL in tests.
	BaseURL string
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
	TimeSyncInterval time.Duration
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
	// two years, unfilled cancelled ones only a day.
	HistoryLookback time.Duration
	// Logger receives the adapter's logs; slog.Default when nil.
	Logger *slog.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Category == "" {
		c.Category = Linear
	}
	if c.BaseURL == "" {
		c.BaseURL = MainnetURL
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.RecvWindow == 0 {
		c.RecvWindow = DefaultRecvWindow
	}
	if c.LookupLag == 0 {
		c.LookupLag = DefaultLookupLag
	}
	if c.ClockMargin == 0 {
		c.ClockMargin = DefaultClockMargin
	}
	if c.TimeSyncInterval == 0 {
		c.TimeSyncInterval = DefaultTimeSyncInterval
	}
	if c.FilterTTL == 0 {
		c.FilterTTL = DefaultFilterTTL
	}
	if c.ConfirmWait == 0 {
		c.ConfirmWait = DefaultConfirmWait
	}
	if c.HistoryLookback == 0 {
		c.HistoryLookback = DefaultHistoryLookback
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.Category != Linear && c.Category != Spot {
		errs = append(errs, fmt.Errorf("category %q is not %q or %q", c.Category, Linear, Spot))
	}
	if c.APIKey == "" {
		errs = append(errs, errors.New("api key is empty"))
	}
	if c.APISecret == "" {
		errs = append(errs, errors.New("api secret is empty"))
	}
	if c.RecvWindow < time.Millisecond || c.RecvWindow%time.Millisecond != 0 {
		errs = append(errs, fmt.Errorf("recv window %s is not a positive whole number of milliseconds", c.RecvWindow))
	}
	if c.LookupLag < 0 || c.ClockMargin < 0 || c.TimeSyncInterval < 0 || c.FilterTTL < 0 || c.ConfirmWait < 0 || c.HistoryLookback < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		errs = append(errs, fmt.Errorf("base url %q is not http(s)", c.BaseURL))
	}
	return errors.Join(errs...)
}

// LogValue shows the configuration without its secret (and the key only as
// set or not), so a Config can be logged whole.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("category", string(c.Category)),
		slog.String("base_url", c.BaseURL),
		slog.Bool("api_key_set", c.APIKey != ""),
		slog.Bool("api_secret_set", c.APISecret != ""),
		slog.Duration("recv_window", c.RecvWindow),
	)
}

// Venue is one Bybit account in one category. It is safe for concurrent use.
type Venue struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	offset   time.Duration // server time - local time
	syncedAt time.Time     // local time of the last sync; zero forces one
	filters  map[string]filterEntry
	leverage map[string]int
	// blocked holds, per path ("" for every path), the local time before
	// which requests fail fast because of a rate limit.
	blocked map[string]time.Time
}

var _ exchange.Venue = (*Venue)(nil)

// New returns a Venue for cfg (defaults applied), or an error naming what is
// missing or invalid.
func New(cfg Config) (*Venue, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("bybit config: %w", err)
	}
	v := &Venue{
		cfg:      cfg,
		log:      cfg.Logger.With(slog.String("venue", "bybit"), slog.String("category", string(cfg.Category))),
		filters:  map[string]filterEntry{},
		leverage: map[string]int{},
		blocked:  map[string]time.Time{},
	}
	return v, nil
}

// AcceptWindow is how long after a placement was sent Bybit may still accept
// it and show it to a lookup: the request's recv_window (Bybit refuses it
// after timestamp + recv_window), plus LookupLag for its order queries to
// catch up, plus ClockMargin for the error in the server-time offset.
// Defaults: 5 s + 10 s + 2 s = 17 s.
func (v *Venue) AcceptWindow() time.Duration {
	return v.cfg.RecvWindow + v.cfg.LookupLag + v.cfg.ClockMargin
}

// RefusesLateRequests is true (see exchange.LateRefuser), and rests on the
// orderLinkId, not the clock: Bybit documents recv_window as a check on
// receipt only, but keeps an orderLinkId "always unique" (create-order
// page), so an order sent again under the same ID and a late original
// cannot both exist — whichever reaches Bybit second is refused as a
// duplicate.
func (v *Venue) RefusesLateRequests() bool { return true }

// Category returns the category this venue trades.
func (v *Venue) Category() Category { return v.cfg.Category }
