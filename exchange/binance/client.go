package binance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// maxBody bounds how much of an answer is read; exchangeInfo for every
// futures symbol is the largest answer the venue reads.
const maxBody = 16 << 20

// request is one call to Binance.
type request struct {
	method string
	path   string
	params params
	signed bool
	// weight is the endpoint's request weight, checked against the budget
	// before sending.
	weight int
	// placement marks an order placement: an answer lost after the request
	// was written means the order may exist, and the caller's send guard
	// is checked before it (venuekit.BeforeSend).
	placement bool
	// stamp, when set, is the signed timestamp (Binance's clock) instead of
	// the time the request is built: an order is stamped when Place starts,
	// so that the reads before it cannot stretch its recvWindow past the
	// accept window the gateway counts from there.
	stamp time.Time
}

// do sends req and decodes a 2xx answer into out. Every error it returns
// wraps one of the exchange errors (or is an *APIError whose class says
// the order was refused for good). No credential and no signature is in
// their text, whatever Binance or a proxy echoed.
func (v *Venue) do(ctx context.Context, req request, out any) (err error) {
	var sig string
	defer func() { err = venuekit.RedactError(err, v.secrets(sig)...) }()
	if err := v.gate(ctx, req.weight); err != nil {
		return err
	}
	payload := req.params
	if req.signed {
		stamp := req.stamp
		if stamp.IsZero() {
			now, err := v.serverNow(ctx)
			if err != nil {
				return err
			}
			stamp = now
		}
		payload = append(payload[:len(payload):len(payload)],
			param{"recvWindow", strconv.FormatInt(v.cfg.RecvWindow.Milliseconds(), 10)},
			param{"timestamp", strconv.FormatInt(stamp.UnixMilli(), 10)})
	}
	encoded := payload.encode()
	if req.signed {
		// The signature goes last and is not part of what it signs.
		sig = Sign(v.cfg.APISecret, encoded)
		encoded += "&signature=" + sig
	}

	if err := venuekit.BeforeSend(ctx, "binance", req.path, req.placement); err != nil {
		return err
	}
	ctx, wrote := venuekit.TraceWrites(ctx)
	target := v.cfg.BaseURL + req.path
	var body io.Reader
	if req.method == http.MethodGet {
		if encoded != "" {
			target += "?" + encoded
		}
	} else {
		body = strings.NewReader(encoded)
	}
	hreq, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		return fmt.Errorf("binance: %s %s: %w", req.method, req.path, venuekit.Lost("binance", req.path, false, false, "build request: "+err.Error()))
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if req.signed {
		hreq.Header.Set("X-MBX-APIKEY", v.cfg.APIKey)
	}

	resp, err := v.cfg.HTTPClient.Do(hreq)
	if err != nil {
		// The URL in a *url.Error carries the signed query; keep only the
		// cause.
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err
		}
		return v.lost(req, wrote(), err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return v.lost(req, true, fmt.Errorf("read answer: %w", err))
	}
	v.noteWeight(resp.Header)

	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusTeapot:
		return v.rateLimited(ctx, req, resp, raw, v.secrets(sig))
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		if out == nil {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return v.lost(req, true, fmt.Errorf("decode answer: %w", err))
		}
		return nil
	}

	apiErr := &APIError{Venue: "binance", Path: req.path, HTTPStatus: resp.StatusCode, MayExist: req.placement}
	var body2 struct {
		Code *int   `json:"code"`
		Msg  string `json:"msg"`
	}
	if json.Unmarshal(raw, &body2) != nil || body2.Code == nil {
		// Not Binance's error shape: a proxy, a gateway or the WAF
		// answered, after the request was written. Only the WAF's 403
		// is documented as a refusal before the API ("HTTP 403 return
		// code is used when a WAF rule has been violated", rest-api.md
		// "HTTP Return Codes"; 429 and 418 are handled above). Any other
		// status — a gateway's 408 after "a timeout has occurred while
		// waiting for a response from the backend server" (USDⓈ-M
		// general-info), a proxy's 400 or 502 — may follow an order the
		// matching engine took: unknown.
		apiErr.Msg = http.StatusText(resp.StatusCode)
		apiErr.Class = venuekit.Bare(resp.StatusCode, http.StatusForbidden)
	} else {
		// Classified on Binance's own text (a redacted word could be
		// one classify matches), then redacted before it is logged below.
		apiErr.Code = *body2.Code
		apiErr.Class = classify(resp.StatusCode, apiErr.Code, body2.Msg)
		apiErr.Msg = venuekit.Redact(body2.Msg, v.secrets(sig)...)
		if resp.StatusCode >= 500 && apiErr.Class != ClassUnknown {
			// Whatever the code, a 5xx leaves the execution status unknown.
			apiErr.Class = ClassUnknown
		}
	}
	switch apiErr.Class {
	case ClassTimestamp:
		v.resyncAfterTimestampError(ctx, apiErr)
	case ClassCredentials:
		v.log.ErrorContext(ctx, "binance refused the api credentials: check the api key and secret, that the key and the account may trade this market (msg says which), and that this host's ip is on the key's whitelist; signals fail with 503 until it is fixed",
			"market", string(v.cfg.Market), "base_url", exchange.RedactURL(v.cfg.BaseURL), "api_key", "set", "code", apiErr.Code, "msg", apiErr.Msg)
	case ClassRateLimited:
		v.pause(ctx, time.Second, apiErr.Msg)
	}
	return fmt.Errorf("binance: %s %s: %w", req.method, req.path, apiErr)
}

// secrets are what no error text may carry: the credentials and the
// request's signature.
func (v *Venue) secrets(sig string) []string {
	return []string{v.cfg.APIKey, v.cfg.APISecret, sig, exchange.URLPassword(v.cfg.BaseURL)}
}

// lost classifies a request whose answer never arrived: a placement that
// was written may have reached Binance; anything else placed nothing.
func (v *Venue) lost(req request, wrote bool, err error) error {
	return fmt.Errorf("binance: %s %s: answer lost: %w", req.method, req.path, venuekit.Lost("binance", req.path, req.placement, wrote, err.Error()))
}

// rateLimited handles 429 and 418: Binance refused the request before
// acting on it, and asks for Retry-After seconds of silence.
func (v *Venue) rateLimited(ctx context.Context, req request, resp *http.Response, raw []byte, secrets []string) error {
	wait := venuekit.RetryAfter(resp.Header, time.Second)
	apiErr := &APIError{Venue: "binance", Path: req.path, HTTPStatus: resp.StatusCode, Class: ClassRateLimited, Msg: http.StatusText(resp.StatusCode), MayExist: req.placement}
	var b struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}
	if json.Unmarshal(raw, &b) == nil && b.Code != 0 {
		apiErr.Code, apiErr.Msg = b.Code, venuekit.Redact(b.Msg, secrets...)
	}
	if until, ok := v.bannedUntil(b.Msg); ok && resp.Header.Get("Retry-After") == "" && until > wait {
		wait = until
	}
	v.pause(ctx, wait, apiErr.Msg)
	return fmt.Errorf("binance: %s %s: retry after %s: %w", req.method, req.path, wait, apiErr)
}

// banRE finds the end of an IP ban in -1003's message, "Way too many
// requests; IP banned until %s." (USDⓈ-M error-code.md, -1003
// TOO_MANY_REQUESTS): Binance's time in milliseconds.
var banRE = regexp.MustCompile(`banned until ([0-9]{10,})`)

// bannedUntil is how long from now the ban msg names lasts, read on
// Binance's clock (its measured offset); ok is false when msg names none
// or it has ended. USDⓈ-M's general-info ("LIMITS") documents no
// Retry-After for a 418, and a client that does not back off has its ban
// extended, "from 2 minutes to 3 days".
func (v *Venue) bannedUntil(msg string) (time.Duration, bool) {
	m := banRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, false
	}
	ms, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	left := time.UnixMilli(ms).Sub(v.clock.At(v.cfg.Now()))
	// No longer than the longest ban documented: a malformed time (or
	// another unit) would silence the venue until a restart.
	return min(left, maxBan), left > 0
}

// maxBan is the longest IP ban Binance documents ("from 2 minutes to 3
// days", general-info.md, LIMITS): bannedUntil's bound.
const maxBan = 3 * 24 * time.Hour

// pause stops every request until wait from now.
func (v *Venue) pause(ctx context.Context, wait time.Duration, why string) {
	v.pauses.Pause("", v.cfg.Now().Add(wait))
	v.log.WarnContext(ctx, "binance rate limit: pausing requests", "market", string(v.cfg.Market), "retry_after", wait, "msg", why)
}

// gate refuses a request while Binance asked for silence, and waits for the
// next minute when the request would take the used weight past the budget.
// Within a Place (see withOrderExpiry), a request is refused at once rather
// than held past the moment the order's recvWindow ends: Binance would
// refuse the order with -1021 by then anyway.
func (v *Venue) gate(ctx context.Context, weight int) error {
	now := v.cfg.Now()
	if paused, ok := v.pauses.Until(now, ""); ok {
		return fmt.Errorf("binance: rate limited for another %s: %w", paused.Sub(now).Round(time.Millisecond), exchange.ErrUnreachable)
	}
	v.mu.Lock()
	used, minute := v.usedWeight, v.weightMinute
	v.mu.Unlock()
	offset := v.clock.Offset()
	if v.cfg.WeightBudget == 0 || used+weight <= v.cfg.WeightBudget {
		return nil
	}
	server := now.Add(offset)
	if server.Unix()/60 != minute {
		return nil // a new minute: Binance has reset the count
	}
	wait := time.Unix((minute+1)*60, 0).Sub(server)
	if expires, ok := ctx.Value(orderExpiryKey{}).(time.Time); ok && server.Add(wait).After(expires) {
		return fmt.Errorf("binance: request weight %d of %d used this minute; the order's recvWindow ends before the next minute: %w", used, v.cfg.WeightBudget, exchange.ErrUnreachable)
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return fmt.Errorf("binance: request weight %d of %d used this minute; next minute starts after the deadline: %w", used, v.cfg.WeightBudget, exchange.ErrUnreachable)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("binance: waiting for request weight: %w: %w", exchange.ErrUnreachable, ctx.Err())
	case <-t.C:
		return nil
	}
}

// orderExpiryKey carries, in a Place's context, when its order's recvWindow
// ends on Binance's clock.
type orderExpiryKey struct{}

// withOrderExpiry marks ctx as a Place's whose order, stamped stamp, expires
// recvWindow later: no request of that Place waits for weight past it.
func (v *Venue) withOrderExpiry(ctx context.Context, stamp time.Time) context.Context {
	return context.WithValue(ctx, orderExpiryKey{}, stamp.Add(v.cfg.RecvWindow))
}

// noteWeight remembers the weight Binance says this IP used this minute.
func (v *Venue) noteWeight(h http.Header) {
	n, err := strconv.Atoi(h.Get("X-MBX-USED-WEIGHT-1M"))
	if err != nil {
		return
	}
	minute := v.clock.ServerNow().Unix() / 60
	v.mu.Lock()
	defer v.mu.Unlock()
	v.usedWeight = n
	v.weightMinute = minute
}

// serverNow is Binance's clock as this venue estimates it, refreshing the
// offset when it is older than TimeSync.
func (v *Venue) serverNow(ctx context.Context) (time.Time, error) {
	return v.serverTimeAt(ctx, time.Time{})
}

// serverTimeAt is Binance's clock at local time t (now when t is zero),
// refreshing the offset first when it is older than TimeSync.
func (v *Venue) serverTimeAt(ctx context.Context, t time.Time) (time.Time, error) {
	if err := v.syncTime(ctx); err != nil {
		return time.Time{}, err
	}
	if t.IsZero() {
		t = v.cfg.Now()
	}
	return v.clock.At(t), nil
}

// syncTime measures the offset between Binance's clock and the local one
// (GET /time) unless it is younger than TimeSync.
func (v *Venue) syncTime(ctx context.Context) error {
	_, err := v.clock.Ensure(ctx, func(ctx context.Context) (time.Time, error) {
		var r struct {
			ServerTime int64 `json:"serverTime"`
		}
		if err := v.do(ctx, request{method: http.MethodGet, path: v.prefix + "/time", weight: 1}, &r); err != nil {
			return time.Time{}, fmt.Errorf("binance: server time: %w", err)
		}
		return time.UnixMilli(r.ServerTime), nil
	})
	return err
}

// resyncAfterTimestampError refreshes the offset at once: the request was
// refused (nothing placed), and the next one should not be.
func (v *Venue) resyncAfterTimestampError(ctx context.Context, apiErr *APIError) {
	v.clock.Forget()
	if err := v.syncTime(ctx); err != nil {
		v.log.WarnContext(ctx, "binance refused a timestamp and the server time could not be read", "market", string(v.cfg.Market), "msg", apiErr.Msg, "err", err)
		return
	}
	v.log.WarnContext(ctx, "binance refused a timestamp (clock skew); server time resynced", "market", string(v.cfg.Market), "msg", apiErr.Msg, "offset", v.clock.Offset())
}
