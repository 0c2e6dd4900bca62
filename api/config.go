package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/internal/timing"
)

// Config is the HTTP layer's configuration. Zero values take the defaults of
// DefaultConfig (see WithDefaults); Validate refuses values that would turn
// a protection off.
type Config struct {
	// WebhookSecret authenticates signals, in the body or as the
	// X-Hoox-Signature HMAC key (HOOX_WEBHOOK_SECRET). Empty refuses every
	// signal; `hoox serve` refuses to start without one.
	WebhookSecret string
	// AdminToken enables /admin (HOOX_ADMIN_TOKEN); empty disables it.
	AdminToken string
	// MaxBody is the largest accepted webhook body in bytes
	// (HOOX_MAX_BODY). Default 64 KiB; at least 1.
	MaxBody int64
	// AllowedIPs limits webhook senders (HOOX_ALLOWED_IPS); empty allows
	// any.
	AllowedIPs IPList
	// TrustedProxies are the peers whose X-Forwarded-For is believed
	// (HOOX_TRUSTED_PROXIES).
	TrustedProxies IPList
	// RateLimit caps signals per second (HOOX_RATE_LIMIT; 0 = no limit),
	// with RateBurst (HOOX_RATE_BURST, default 20) above it. A finite,
	// non-negative rate; a burst of at least 1 when the rate is set, since
	// a burst of 0 refuses every signal.
	RateLimit float64
	RateBurst int
	// RequireSignedTimestamp refuses an X-Hoox-Signature sent without
	// X-Hoox-Timestamp (HOOX_REQUIRE_SIGNED_TIMESTAMP). Without it, a
	// body-only signature never expires: a keyed or timestamped body is
	// kept from executing twice only by its trace, for HOOX_TRACE_TTL.
	// A body with neither key nor timestamp is refused a body-only
	// signature either way, since its window is minutes, not a day.
	RequireSignedTimestamp bool
	// SessionIdle is how long a web page (/ui/) session lives unused
	// (HOOX_UI_SESSION_IDLE). Default 8h.
	SessionIdle time.Duration
	// LoginThrottle slows guessing at the web page's login. Default
	// db.DefaultLoginThrottle; zero fields take its values.
	LoginThrottle db.LoginThrottle
	// AdminStatementTimeout bounds each database statement an /admin
	// route runs (SET LOCAL statement_timeout): a listing stuck behind a
	// lock or slow on a huge table is cancelled by Postgres, and its
	// connection freed, instead of running on after the operator gave up.
	// POST /admin/purge only queues the purge (its job bounds itself).
	// HOOX_ADMIN_STATEMENT_TIMEOUT; default 30s, at least 1ms.
	AdminStatementTimeout time.Duration
	// Timing holds the settings the HTTP layer shares with other packages:
	// how far a signed X-Hoox-Timestamp may lie in the past or the future
	// before the request is refused as a replay (MaxSignalAge), and how
	// long a release (DELETE /admin/traces/…, the web page's release
	// button) waits for an attempt still holding the trace (LockWait, as
	// long as a repeat waits). They are declared, defaulted and validated
	// once, in package timing; internal/app passes the operator's
	// (app.Config.Timing). Validate does not check them.
	Timing timing.Config
}

// MinSecretLen is the fewest characters HOOX_WEBHOOK_SECRET and
// HOOX_ADMIN_TOKEN may have. A length cannot measure how guessable a
// secret is, but it refuses the obviously guessable ("x", "changeme",
// "secret123") while every generated secret passes: a UUID, `openssl rand
// -hex 8` and up, the 48 hex characters `hoox dev` generates. The webhook
// secret needs it most: wrong secrets on /webhook are not throttled, and a
// captured signed request lets its HMAC key be guessed offline.
const MinSecretLen = 16

// DefaultConfig holds the defaults the README's configuration table lists.
func DefaultConfig() Config {
	return Config{MaxBody: 64 << 10, RateBurst: 20, SessionIdle: 8 * time.Hour, AdminStatementTimeout: 30 * time.Second,
		LoginThrottle: db.DefaultLoginThrottle(), Timing: timing.DefaultConfig()}
}

// WithDefaults returns c with a zero MaxBody, RateBurst, SessionIdle and
// AdminStatementTimeout (or a negative one),
// and LoginThrottle's and Timing's zero fields, set to DefaultConfig's.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.MaxBody == 0 {
		c.MaxBody = d.MaxBody
	}
	if c.SessionIdle == 0 {
		c.SessionIdle = d.SessionIdle
	}
	if c.AdminStatementTimeout <= 0 {
		c.AdminStatementTimeout = d.AdminStatementTimeout
	}
	if c.RateBurst == 0 {
		c.RateBurst = d.RateBurst
	}
	c.LoginThrottle = c.LoginThrottle.WithDefaults()
	c.Timing = c.Timing.WithDefaults()
	return c
}

// Validate refuses settings that would turn a protection off or refuse every
// signal. Its errors are *confcheck.Error values naming the field (Config
// "api"), all of them joined. It never repeats a secret. The shared Timing
// is its owner's to validate (timing.Config.Validate).
func (c Config) Validate() error {
	ck := confcheck.New("api")
	// A secret is never repeated in a refusal: the value is left empty.
	if n := utf8.RuneCountInString(c.WebhookSecret); n > 0 && n < MinSecretLen {
		ck.Refuse("WebhookSecret", "", fmt.Sprintf("must be at least %d characters (it has %d); generate one, e.g. with openssl rand -hex 24", MinSecretLen, n))
	}
	if n := utf8.RuneCountInString(c.AdminToken); n > 0 && n < MinSecretLen {
		ck.Refuse("AdminToken", "", fmt.Sprintf("must be at least %d characters (it has %d); wrong tokens are throttled, but a short one is still guessed in few tries; generate one, e.g. with openssl rand -hex 24", MinSecretLen, n))
	} else if c.AdminToken != strings.TrimSpace(c.AdminToken) {
		ck.Refuse("AdminToken", "", "must not begin or end with spaces: a token given at login or as a bearer token is trimmed, so it could never match")
	} else if c.AdminToken != "" && equalSecret(c.AdminToken, c.WebhookSecret) {
		ck.Refuse("AdminToken", "", "must differ from HOOX_WEBHOOK_SECRET: the webhook secret is pasted into every TradingView alert, and whoever reads one would hold the admin API")
	}
	if c.MaxBody < 1 {
		ck.Refuse("MaxBody", strconv.FormatInt(c.MaxBody, 10), "must be at least 1 byte")
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		ck.Refuse("RateLimit", strconv.FormatFloat(c.RateLimit, 'f', -1, 64), "must be a finite number of signals per second, 0 for no limit")
	}
	if c.RateBurst < 0 || (c.RateLimit > 0 && c.RateBurst < 1) {
		ck.Refuse("RateBurst", strconv.Itoa(c.RateBurst), "must be at least 1 when a rate limit is set, or every signal is refused")
	}
	ck.Duration("SessionIdle", c.SessionIdle, time.Minute, 0, ": a web session must outlive a page's polling")
	// Postgres counts statement_timeout in milliseconds, and 0 there means
	// no bound at all.
	ck.Duration("AdminStatementTimeout", c.AdminStatementTimeout, time.Millisecond, 0, ": every admin statement is bounded (0 would leave it unbounded)")
	return ck.Err()
}
