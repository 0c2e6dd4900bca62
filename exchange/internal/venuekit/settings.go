package venuekit

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange"
)

// Settings points at the fields every adapter's Config has. Each Config
// keeps them as its own flat fields (callers build a Config as a literal),
// and hands their addresses here so that one function defaults them and
// one function checks them, for every venue alike.
type Settings struct {
	BaseURL    *string
	HTTPClient **http.Client
	Now        *func() time.Time
	// Window is the request's own expiry (Binance's and Bybit's recv
	// window, OKX's expTime).
	Window                                               *time.Duration
	LookupLag, ClockMargin, TimeSync, FilterTTL, Confirm *time.Duration
	Logger                                               **slog.Logger
}

// Defaults is one venue's values for the Settings left zero; the venues
// differ in their numbers, not in how the numbers are applied.
type Defaults struct {
	BaseURL, TestnetBaseURL string
	HTTPTimeout             time.Duration
	Window, LookupLag       time.Duration
	ClockMargin, TimeSync   time.Duration
	FilterTTL, ConfirmWait  time.Duration
}

// Apply sets every zero setting to its default (the testnet URL when
// testnet is set) and trims a trailing slash from the base URL.
func (s Settings) Apply(d Defaults, testnet bool) {
	if *s.BaseURL == "" {
		*s.BaseURL = d.BaseURL
		if testnet {
			*s.BaseURL = d.TestnetBaseURL
		}
	}
	*s.BaseURL = strings.TrimRight(*s.BaseURL, "/")
	if *s.HTTPClient == nil {
		*s.HTTPClient = &http.Client{Timeout: d.HTTPTimeout}
	}
	if *s.Now == nil {
		*s.Now = time.Now
	}
	for _, f := range []struct {
		p *time.Duration
		v time.Duration
	}{{s.Window, d.Window}, {s.LookupLag, d.LookupLag}, {s.ClockMargin, d.ClockMargin},
		{s.TimeSync, d.TimeSync}, {s.FilterTTL, d.FilterTTL}, {s.Confirm, d.ConfirmWait}} {
		if *f.p == 0 {
			*f.p = f.v
		}
	}
	if *s.Logger == nil {
		*s.Logger = slog.Default()
	}
}

// Negative reports whether any of the shared durations, or of the
// venue's own extra ones, is negative.
func (s Settings) Negative(extra ...time.Duration) bool {
	for _, d := range append([]time.Duration{*s.LookupLag, *s.ClockMargin, *s.TimeSync, *s.FilterTTL, *s.Confirm}, extra...) {
		if d < 0 {
			return true
		}
	}
	return false
}

// Empty names each credential left empty (pairs of name, value), in
// order, as the adapters that join their errors word it.
func Empty(creds ...[2]string) []error {
	var errs []error
	for _, c := range creds {
		if c[1] == "" {
			errs = append(errs, fmt.Errorf("%s is empty", c[0]))
		}
	}
	return errs
}

// Check lists what is wrong with the shared settings as the adapters
// that join their errors word it: a negative duration (shared or one of
// the venue's extra ones), a base URL that is not http(s).
func (s Settings) Check(extra ...time.Duration) []error {
	var errs []error
	if s.Negative(extra...) {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if u, err := url.Parse(*s.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Unparsable (a proxy password with a character user information
		// may not carry unencoded) would fail every request later, with
		// the URL in the error: refused here, shown redacted.
		errs = append(errs, fmt.Errorf("base url %q is not http(s)://host (percent-encode a proxy password's special characters)", exchange.RedactURL(*s.BaseURL)))
	}
	return errs
}
