package bybit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// sign is Bybit v5's HMAC signature: lower-case hex HMAC-SHA256, keyed by the
// API secret, of timestamp + api key + recv_window + payload, where payload
// is the query string of a GET and the JSON body of a POST, byte for byte as
// sent.
func sign(secret, timestamp, apiKey, recvWindow, payload string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + apiKey + recvWindow + payload))
	return hex.EncodeToString(mac.Sum(nil))
}

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
	// stamp, when set, is X-BAPI-TIMESTAMP (Bybit's clock) instead of the
	// time the request is built: an order is stamped when Place starts, so
	// that the reads before it cannot stretch its recv_window past the
	// accept window the gateway counts from there.
	stamp time.Time
}

// call sends r and decodes the answer's result into out. Its errors are
// *apiError values classified by ErrorTable (or by the HTTP failure), so
// they wrap the exchange errors the gateway branches on.
func (v *Venue) call(ctx context.Context, r request, out any) error {
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

	// mayHaveWritten is set once the transport has begun writing the
	// request: after the headers (the body follows them), or when it
	// reports the request written, with or without an error. A write
	// that failed part-way still sent whatever went before the failure,
	// and what reached Bybit is not known here; only a request that
	// never got that far (refused connection, DNS, TLS, cancelled before
	// sending) is known not to have reached the venue.
	var mayHaveWritten atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { mayHaveWritten.Store(true) },
		WroteRequest: func(httptrace.WroteRequestInfo) { mayHaveWritten.Store(true) },
	})
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
		req.Header.Set("X-BAPI-SIGN", sign(v.cfg.APISecret, ts, v.cfg.APIKey, recv, payload))
	}

	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		// Written means Bybit may have read and executed it: only a
		// lookup can tell. Not written (refused connection, DNS, TLS,
		// cancelled before sending) means nothing reached the venue.
		if mayHaveWritten.Load() {
			return newAPIError(ClassUnknown, r.path, 0, 0, "no answer after the request was sent: "+err.Error())
		}
		return newAPIError(ClassUnreachable, r.path, 0, 0, "request not sent: "+err.Error())
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
	// the key stays out of errors and logs.
	env.RetMsg = strings.ReplaceAll(env.RetMsg, v.cfg.APIKey, "[api key]")

	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden:
		wait := retryAfter(resp.Header, time.Second)
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
		if resp.StatusCode == http.StatusNotFound {
			// "Cannot find path: wrong path, or category value does not
			// match account mode" (error.mdx, "HTTP Code"): the router
			// found nothing to execute.
			return newAPIError(ClassUnreachable, r.path, resp.StatusCode, 0, "not found (base url or account mode)")
		}
		// Not Bybit's answer to this request: a gateway or proxy that
		// gave up (408) or failed in its own way, after the request was
		// written. Whatever Bybit did with it is unknown.
		return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, http.StatusText(resp.StatusCode))
	case jsonErr != nil:
		return newAPIError(ClassUnknown, r.path, resp.StatusCode, 0, "answer is not bybit json")
	}

	if env.RetCode != 0 {
		class := classify(env.RetCode)
		e := newAPIError(class, r.path, resp.StatusCode, env.RetCode, env.RetMsg)
		switch class {
		case ClassUnreachable:
			if env.RetCode == 10002 || env.RetCode == -1 {
				v.forgetTime()
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

// credentialsError logs what the operator has to fix; the order was not
// placed, and a retry succeeds once the key is fixed.
func (v *Venue) credentialsError(ctx context.Context, e *apiError) error {
	hint := "check HOOX_BYBIT*_API_KEY / _API_SECRET"
	switch e.retCode {
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
		slog.String("api_key", "set"), slog.Int("ret_code", e.retCode), slog.Int("http_status", e.status),
		slog.String("ret_msg", e.retMsg), slog.String("fix", hint))
	return e
}

// retryAfter reads Retry-After in seconds, or def.
func retryAfter(h http.Header, def time.Duration) time.Duration {
	if s, err := strconv.Atoi(h.Get("Retry-After")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// resetTime is the local time at which X-Bapi-Limit-Reset-Timestamp (Bybit's
// clock, ms) falls, or now+def without a usable header.
func (v *Venue) resetTime(h http.Header, def time.Duration) time.Time {
	now := v.cfg.Now()
	ms, err := strconv.ParseInt(h.Get("X-Bapi-Limit-Reset-Timestamp"), 10, 64)
	if err != nil {
		return now.Add(retryAfter(h, def))
	}
	v.mu.Lock()
	off := v.offset
	v.mu.Unlock()
	t := time.UnixMilli(ms).Add(-off)
	if !t.After(now) {
		return now.Add(retryAfter(h, def))
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

func (v *Venue) block(path string, until time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if until.After(v.blocked[path]) {
		v.blocked[path] = until
	}
}

// blockedUntil reports whether requests to path must not be sent yet.
func (v *Venue) blockedUntil(path string) (time.Time, bool) {
	now := v.cfg.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, p := range []string{"", path} {
		if until, ok := v.blocked[p]; ok {
			if now.Before(until) {
				return until, true
			}
			delete(v.blocked, p)
		}
	}
	return time.Time{}, false
}

// serverNow is the local clock corrected to Bybit's.
func (v *Venue) serverNow() time.Time { return v.serverTimeAt(v.cfg.Now()) }

// serverTimeAt is Bybit's clock at local time t, by the last measured
// offset.
func (v *Venue) serverTimeAt(t time.Time) time.Time {
	v.mu.Lock()
	off := v.offset
	v.mu.Unlock()
	return t.Add(off)
}

func (v *Venue) forgetTime() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.syncedAt = time.Time{}
}

// ensureTime refreshes the server-time offset when it was never measured,
// is older than TimeSyncInterval, or was distrusted after a 10002.
func (v *Venue) ensureTime(ctx context.Context) error {
	v.mu.Lock()
	fresh := !v.syncedAt.IsZero() && v.cfg.Now().Sub(v.syncedAt) < v.cfg.TimeSyncInterval
	v.mu.Unlock()
	if fresh {
		return nil
	}
	return v.SyncTime(ctx)
}

// SyncTime measures the offset between the local clock and Bybit's
// (GET /v5/market/time), assuming the answer was stamped halfway through
// the round trip. Requests call it when needed; it is exported for a
// start-up check.
func (v *Venue) SyncTime(ctx context.Context) error {
	var res struct {
		TimeSecond string `json:"timeSecond"`
		TimeNano   string `json:"timeNano"`
	}
	t0 := v.cfg.Now()
	if err := v.call(ctx, request{method: http.MethodGet, path: "/v5/market/time"}, &res); err != nil {
		return fmt.Errorf("sync server time: %w", asUnreachable(err))
	}
	t1 := v.cfg.Now()
	ns, err := strconv.ParseInt(res.TimeNano, 10, 64)
	if err != nil {
		sec, err2 := strconv.ParseInt(res.TimeSecond, 10, 64)
		if err2 != nil {
			return fmt.Errorf("sync server time: %w", newAPIError(ClassUnreachable, "/v5/market/time", 0, 0, "no time in answer"))
		}
		ns = sec * int64(time.Second)
	}
	server := time.Unix(0, ns)
	mid := t0.Add(t1.Sub(t0) / 2)
	offset := server.Sub(mid)
	v.mu.Lock()
	v.offset, v.syncedAt = offset, t1
	v.mu.Unlock()
	if offset > time.Second || offset < -time.Second {
		v.log.InfoContext(ctx, "local clock differs from bybit's; correcting timestamps", slog.Duration("offset", offset))
	}
	return nil
}

// asUnreachable turns a lost answer to a preparatory request (time,
// filters, ticker, position, balance, leverage) into "nothing was placed":
// the order itself was not sent, whatever happened to the request before
// it. Refusals keep their class, for the caller to turn into a rejection.
func asUnreachable(err error) error {
	var e *apiError
	if errors.As(err, &e) && (e.class == ClassUnknown || e.class == ClassDuplicate) {
		return fmt.Errorf("%w", newAPIError(ClassUnreachable, e.path, e.status, e.retCode, e.retMsg+" (before the order was sent)"))
	}
	return err
}
