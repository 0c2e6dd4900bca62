package bybit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/internal/venuekit"
)

// envelope is the shape of every Bybit v5 answer.
type envelope struct {
	RetCode int             `json:"retCode"`
	RetMsg  string          `json:"retMsg"`
	Result  json.RawMessage `json:"result"`
	Time    int64           `json:"time"`
}

// maxBody bounds how much of an answer is read.
const maxBody = 4 << 20

// request is one call to Bybit.
type request struct {
	method  string
	path    string
	query   url.Values // GET
	body    any        // POST, marshalled once and signed as sent
	private bool
	// placement marks a request that can create an order (an order, a
	// trailing stop): the caller's send guard is checked before it
	// (venuekit.BeforeSend).
	placement bool
	// stamp, when set, is X-BAPI-TIMESTAMP (Bybit's clock) instead of the
	// time the request is built: an order is stamped when Place starts, so
	// that the reads before it cannot stretch its recv_window past the
	// accept window the gateway counts from there.
	stamp time.Time
}

// do sends r and decodes the answer's result into out. Its errors are
// *APIError values classified by ErrorTable (or by the HTTP failure), so
// they wrap the exchange errors the gateway branches on — except a
// placement the caller's send guard stopped, which wraps the guard's error
// (exchange.ErrUnreachable: nothing sent). No credential and no
// signature is in their text, whatever Bybit or a proxy echoed.
func (v *Venue) do(ctx context.Context, r request, out any) (err error) {
	var sign string
	defer func() { err = venuekit.RedactError(err, v.secrets(sign)...) }()
	if until, ok := v.blockedUntil(r.path); ok {
		return newAPIError(ClassRateLimited, r.path, 0, 0,
			fmt.Sprintf("rate limited until %s; not sent", until.UTC().Format(time.RFC3339)))
	}
	if r.private {
		if err := v.ensureTime(ctx); err != nil {
			return err
		}
	}

	target := v.cfg.BaseURL + r.path
	payload := ""
	var bodyReader io.Reader
	if r.method == http.MethodGet {
		payload = r.query.Encode()
		if payload != "" {
			target += "?" + payload
		}
	} else {
		b, err := json.Marshal(r.body)
		if err != nil {
			return newAPIError(ClassUnreachable, r.path, 0, 0, "encode body: "+err.Error())
		}
		payload = string(b)
		bodyReader = bytes.NewReader(b)
	}

	// See venuekit.TraceWrites: only a request the transport never began
	// writing is known not to have reached Bybit.
	if err := venuekit.BeforeSend(ctx, "bybit", r.path, r.placement); err != nil {
		return err
	}
	ctx, mayHaveWritten := venuekit.TraceWrites(ctx)
	req, err := http.NewRequestWithContext(ctx, r.method, target, bodyReader)
	if err != nil {
		return newAPIError(ClassUnreachable, r.path, 0, 0, "build request: "+err.Error())
	}
	if r.method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if r.private {
		stamp := r.stamp
		if stamp.IsZero() {
			stamp = v.serverNow()
		}
		ts := strconv.FormatInt(stamp.UnixMilli(), 10)
		recv := strconv.FormatInt(v.cfg.RecvWindow.Milliseconds(), 10)
		req.Header.Set("X-BAPI-API-KEY", v.cfg.APIKey)
		req.Header.Set("X-BAPI-TIMESTAMP", ts)
		req.Header.Set("X-BAPI-RECV-WINDOW", recv)
		req.Header.Set("X-BAPI-SIGN-TYPE", "2")
		sign = Sign(v.cfg.APISecret, ts, v.cfg.APIKey, recv, payload)
		req.Header.Set("X-BAPI-SIGN", sign)
	}

	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		// Written means Bybit may have read and executed it: only a
		// lookup can tell. Not written (refused connection, DNS, TLS,
		// cancelled before sending) means nothing reached the venue.
		if mayHaveWritten() {
			return venuekit.Lost("bybit", r.path, true, true, "no answer after the request was sent: "+err.Error())
		}
		return venuekit.Lost("bybit", r.path, true, false, "request not sent: "+err.Error())
	}
	defer resp.Body.Close()
	v.noteLimits(r.path, resp.Header)
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, "answer cut off: "+err.Error())
	}
	var env envelope
	jsonErr := json.Unmarshal(raw, &env)
	// Bybit's 10004 message echoes the signed string, API key included;
	// no credential goes into errors and logs.
	env.RetMsg = venuekit.Redact(env.RetMsg, v.secrets(sign)...)

	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden:
		wait := venuekit.RetryAfter(resp.Header, time.Second)
		if resp.StatusCode == http.StatusForbidden && resp.Header.Get("Retry-After") == "" {
			wait = DefaultIPBanWait // "access too frequent": Bybit says wait 10 minutes
		}
		until := v.cfg.Now().Add(wait)
		v.block("", until)
		v.log.WarnContext(ctx, "bybit rate limit: requests paused", slog.Int("http_status", resp.StatusCode),
			slog.String("path", r.path), slog.Time("until", until))
		return newAPIError(ClassRateLimited, r.path, resp.StatusCode, 0,
			fmt.Sprintf("rate limited until %s", until.UTC().Format(time.RFC3339)))
	case resp.StatusCode == http.StatusUnauthorized:
		return v.credentialsError(ctx, newAPIError(ClassCredentials, r.path, resp.StatusCode, env.RetCode, env.RetMsg))
	case resp.StatusCode >= 500:
		return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, "")
	case resp.StatusCode != http.StatusOK && (jsonErr != nil || env.RetCode == 0):
		// Not Bybit's answer to this request: a gateway or proxy that
		// gave up (408) or failed in its own way, after the request was
		// written, and whatever Bybit did with it is unknown — except 404,
		// "Cannot find path: wrong path, or category value does not match
		// account mode" (error.mdx, "HTTP Code"): the router found nothing
		// to execute.
		msg := http.StatusText(resp.StatusCode)
		if resp.StatusCode == http.StatusNotFound {
			msg = "not found (base url or account mode)"
		}
		return newAPIError(venuekit.Bare(resp.StatusCode, http.StatusNotFound), r.path, resp.StatusCode, 0, msg)
	case jsonErr != nil:
		return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, "answer is not bybit json")
	}

	if env.RetCode != 0 {
		class := classify(env.RetCode)
		e := newAPIError(class, r.path, resp.StatusCode, env.RetCode, env.RetMsg)
		switch class {
		case ClassUnreachable:
			if env.RetCode == 10002 || env.RetCode == -1 {
				v.clock.Forget()
				v.log.WarnContext(ctx, "bybit refused the request's timestamp; server time will be resynchronised before the next request",
					slog.String("path", r.path), slog.String("ret_msg", env.RetMsg))
			}
		case ClassRateLimited:
			until := v.resetTime(resp.Header, time.Second)
			v.block(r.path, until)
			v.log.WarnContext(ctx, "bybit rate limit: requests paused", slog.Int("ret_code", env.RetCode),
				slog.String("path", r.path), slog.Time("until", until))
		case ClassCredentials:
			return v.credentialsError(ctx, e)
		}
		return e
	}
	if out != nil && len(env.Result) > 0 {
		if err := json.Unmarshal(env.Result, out); err != nil {
			return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, "decode result: "+err.Error())
		}
	}
	return nil
}

// secrets are what no error text may carry: the credentials and the
// request's signature.
func (v *Venue) secrets(sign string) []string {
	return []string{v.cfg.APIKey, v.cfg.APISecret, sign, exchange.URLPassword(v.cfg.BaseURL)}
}

// credentialsError logs what the operator has to fix; the order was not
// placed, and a retry succeeds once the key is fixed.
func (v *Venue) credentialsError(ctx context.Context, e *APIError) error {
	hint := "check HOOX_BYBIT*_API_KEY / _API_SECRET"
	switch e.Code {
	case 10003:
		hint = "the API key is unknown to this environment: a testnet key needs the testnet URL and a mainnet key the mainnet URL"
	case 10004:
		hint = "the signature was refused: the API secret does not belong to the API key"
	case 10005:
		hint = "the API key lacks a permission: enable Contract (linear) or Spot trading for it"
	case 10010:
		hint = "the API key is bound to other IP addresses: add this host's public IP to the key's IP whitelist"
	case 33004, -2015:
		hint = "the API key has expired: create a new one"
	case 10008, 10027:
		hint = "bybit does not let this account trade: check the account's mode and status with bybit"
	case 10009:
		hint = "bybit does not serve this host's region: run hoox from a region bybit serves, or use the regional base url"
	case 10028:
		hint = "the account is not a unified trading account: upgrade it"
	case 10029:
		hint = "the API key is limited to other symbols: add this symbol to the key's symbol whitelist"
	}
	v.log.ErrorContext(ctx, "bybit refused the API credentials; no order was placed",
		slog.String("api_key", "set"), slog.Int("ret_code", e.Code), slog.Int("http_status", e.HTTPStatus),
		slog.String("ret_msg", e.Msg), slog.String("fix", hint))
	return e
}

// resetTime is the local time at which X-Bapi-Limit-Reset-Timestamp (Bybit's
// clock, ms) falls, or now+def without a usable header.
func (v *Venue) resetTime(h http.Header, def time.Duration) time.Time {
	now := v.cfg.Now()
	ms, err := strconv.ParseInt(h.Get("X-Bapi-Limit-Reset-Timestamp"), 10, 64)
	if err != nil {
		return now.Add(venuekit.RetryAfter(h, def))
	}
	t := time.UnixMilli(ms).Add(-v.clock.Offset())
	if !t.After(now) {
		return now.Add(venuekit.RetryAfter(h, def))
	}
	return t
}

// noteLimits reads X-Bapi-Limit-Status: with no request left on this
// endpoint, the next ones wait for X-Bapi-Limit-Reset-Timestamp instead of
// being refused with 10006.
func (v *Venue) noteLimits(path string, h http.Header) {
	status := h.Get("X-Bapi-Limit-Status")
	if status == "" {
		return
	}
	if left, err := strconv.Atoi(status); err == nil && left <= 0 {
		if _, err := strconv.ParseInt(h.Get("X-Bapi-Limit-Reset-Timestamp"), 10, 64); err == nil {
			v.block(path, v.resetTime(h, 0))
		}
	}
}

func (v *Venue) block(path string, until time.Time) { v.pauses.Pause(path, until) }

// blockedUntil reports whether requests to path must not be sent yet.
func (v *Venue) blockedUntil(path string) (time.Time, bool) {
	return v.pauses.Until(v.cfg.Now(), "", path)
}

// serverNow is the local clock corrected to Bybit's.
func (v *Venue) serverNow() time.Time { return v.clock.ServerNow() }

// serverTimeAt is Bybit's clock at local time t, by the last measured
// offset.
func (v *Venue) serverTimeAt(t time.Time) time.Time { return v.clock.At(t) }

// ensureTime refreshes the server-time offset when it was never measured,
// is older than TimeSync, or was distrusted after a 10002.
func (v *Venue) ensureTime(ctx context.Context) error {
	measured, err := v.clock.Ensure(ctx, v.readServerTime)
	if err != nil {
		return fmt.Errorf("sync server time: %w", err)
	}
	if off := v.clock.Offset(); measured && (off > time.Second || off < -time.Second) {
		v.log.InfoContext(ctx, "local clock differs from bybit's; correcting timestamps", slog.Duration("offset", off))
	}
	return nil
}

// SyncTime measures the offset between the local clock and Bybit's now
// (GET /v5/market/time), assuming the answer was stamped halfway through
// the round trip. Requests measure it when needed; it is exported for a
// start-up check.
func (v *Venue) SyncTime(ctx context.Context) error {
	v.clock.Forget()
	return v.ensureTime(ctx)
}

// readServerTime reads Bybit's clock.
func (v *Venue) readServerTime(ctx context.Context) (time.Time, error) {
	var res struct {
		TimeSecond string `json:"timeSecond"`
		TimeNano   string `json:"timeNano"`
	}
	if err := v.do(ctx, request{method: http.MethodGet, path: "/v5/market/time"}, &res); err != nil {
		return time.Time{}, asUnreachable(err)
	}
	ns, err := strconv.ParseInt(res.TimeNano, 10, 64)
	if err != nil {
		sec, err2 := strconv.ParseInt(res.TimeSecond, 10, 64)
		if err2 != nil {
			return time.Time{}, newAPIError(ClassUnreachable, "/v5/market/time", 0, 0, "no time in answer")
		}
		ns = sec * int64(time.Second)
	}
	return time.Unix(0, ns), nil
}

// asUnreachable turns a lost answer to a preparatory request (time,
// filters, ticker, position, balance, leverage) into "nothing was placed":
// the order itself was not sent, whatever happened to the request before
// it. Refusals keep their class, for the caller to turn into a rejection.
func asUnreachable(err error) error {
	var e *APIError
	if errors.As(err, &e) && (e.Class == ClassUnknown || e.Class == ClassDuplicate) {
		return fmt.Errorf("%w", newAPIError(ClassUnreachable, e.Path, e.HTTPStatus, e.Code, e.Msg+" (before the order was sent)"))
	}
	return err
}
