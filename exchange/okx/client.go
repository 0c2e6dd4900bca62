package okx

import (
	"bytes"
	"context"
	"encoding/json"
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

// maxBody bounds how much of an answer is read (the instruments list of a
// type is the largest).
const maxBody = 16 << 20

// envelope is the shape of every OKX v5 answer. A failed order carries its
// own sCode and sMsg in data, under code 1 ("Operation failed").
type envelope struct {
	Code string          `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// request is one call to OKX.
type request struct {
	method string
	path   string
	query  url.Values
	body   any
	// private requests are signed.
	private bool
	// placement marks an order placement: it carries expTime, an answer
	// lost after it was written means the order may exist, and the
	// caller's send guard is checked before it (venuekit.BeforeSend).
	placement bool
	// stamp is the placement's stamp on OKX's clock; expTime is stamp +
	// Expiry. Zero: no expTime (the algo endpoint does not take it).
	stamp time.Time
	// instID is the instrument a request with a body acts on (a GET
	// names it in its query); "" when none.
	instID string
}

// pauseKeys are the keys a rate limit on r is held under, narrowest
// first: the endpoint (method and path) on r's instrument, then the
// endpoint on every instrument. OKX limits trading requests per
// instrument and each kind apart ("Rate limit rule: User ID + Instrument
// ID", Post_Place_Order.md; "Rate limits are defined on the Instrument ID
// level" and "Rate limits for placing orders, amending orders, and
// cancelling orders are independent from each other",
// Introduction/Rate_Limits/Trading_Related_Apis.md), so a placement
// answered 50011 holds back that instrument's placements only: not an
// order query on the same path, and not another instrument's order.
func (r request) pauseKeys() (instrument, endpoint string) {
	inst := r.instID
	if inst == "" {
		inst = r.query.Get("instId")
	}
	endpoint = r.method + " " + r.path
	return endpoint + " " + inst, endpoint
}

// do sends r and decodes the answer's data into out. Its errors are
// *APIError values classified by ErrorTable (or by the HTTP failure),
// except a placement the caller's send guard stopped, which wraps the
// guard's error (exchange.ErrUnreachable: nothing sent). No credential
// and no signature is in their text, whatever OKX or a proxy echoed.
func (v *Venue) do(ctx context.Context, r request, out any) (err error) {
	var sign string
	defer func() { err = venuekit.RedactError(err, v.secrets(sign)...) }()
	instrument, endpoint := r.pauseKeys()
	if until, ok := v.pauses.Until(v.cfg.Now(), "", endpoint, instrument); ok {
		return &APIError{Venue: "okx", Path: r.path, Class: ClassRateLimited,
			Msg: "rate limited until " + until.UTC().Format(time.RFC3339) + "; not sent"}
	}
	if r.private {
		if err := v.syncTime(ctx); err != nil {
			return err
		}
	}
	requestPath := r.path
	if len(r.query) > 0 {
		requestPath += "?" + r.query.Encode()
	}
	var body []byte
	if r.method != http.MethodGet {
		b, err := json.Marshal(r.body)
		if err != nil {
			return venuekit.Lost("okx", r.path, r.placement, false, "encode body: "+err.Error())
		}
		body = b
	}
	if err := venuekit.BeforeSend(ctx, "okx", r.path, r.placement); err != nil {
		return err
	}
	ctx, wrote := venuekit.TraceWrites(ctx)
	req, err := http.NewRequestWithContext(ctx, r.method, v.cfg.BaseURL+requestPath, bytes.NewReader(body))
	if err != nil {
		return venuekit.Lost("okx", r.path, r.placement, false, "build request: "+err.Error())
	}
	req.Header.Set("Content-Type", "application/json")
	if v.cfg.Testnet {
		req.Header.Set("x-simulated-trading", "1")
	}
	if r.private {
		ts := Timestamp(v.clock.ServerNow())
		req.Header.Set("OK-ACCESS-KEY", v.cfg.APIKey)
		req.Header.Set("OK-ACCESS-TIMESTAMP", ts)
		req.Header.Set("OK-ACCESS-PASSPHRASE", v.cfg.Passphrase)
		sign = Sign(v.cfg.APISecret, ts, r.method, requestPath, string(body))
		req.Header.Set("OK-ACCESS-SIGN", sign)
	}
	if r.placement && !r.stamp.IsZero() {
		req.Header.Set("expTime", strconv.FormatInt(r.stamp.Add(v.cfg.Expiry).UnixMilli(), 10))
	}

	resp, err := v.cfg.HTTPClient.Do(req)
	if err != nil {
		if ue, ok := err.(*url.Error); ok {
			err = ue.Err
		}
		return venuekit.Lost("okx", r.path, r.placement, wrote(), err.Error())
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return venuekit.Lost("okx", r.path, r.placement, true, "answer cut off: "+err.Error())
	}
	var env envelope
	if json.Unmarshal(raw, &env) != nil || env.Code == "" {
		if resp.StatusCode == http.StatusTooManyRequests {
			wait := venuekit.RetryAfter(resp.Header, DefaultRateLimitGap)
			v.pauses.Pause("", v.cfg.Now().Add(wait))
			if !r.placement {
				return &APIError{Venue: "okx", Path: r.path, HTTPStatus: resp.StatusCode, Class: ClassRateLimited, Msg: "too many requests"}
			}
			// OKX answers 429 both for 50011 (rate limit: nothing placed)
			// and 50013 ("Systems are busy", whose outcome is open);
			// without the body the two cannot be told apart, and OKX keeps
			// a clOrdId unique only among pending orders, so a placement
			// is unknown: looked up, never re-sent blind.
			return &APIError{Venue: "okx", Path: r.path, HTTPStatus: resp.StatusCode, Class: ClassUnknown,
				Msg: "too many requests (a bare 429: the order's fate is unknown)", MayExist: true}
		}
		// Not OKX's answer: a proxy or gateway answered after the request
		// was written, and whatever OKX did with it is unknown. OKX
		// documents no status as a refusal before its API.
		class := venuekit.Bare(resp.StatusCode)
		msg := http.StatusText(resp.StatusCode)
		if resp.StatusCode == http.StatusOK {
			msg = "answer is not okx json"
		}
		return &APIError{Venue: "okx", Path: r.path, HTTPStatus: resp.StatusCode, Class: class, Msg: msg, MayExist: r.placement}
	}
	if env.Code != "0" {
		return v.failure(ctx, r, resp, env, v.secrets(sign))
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			return &APIError{Venue: "okx", Path: r.path, HTTPStatus: resp.StatusCode, Class: ClassUnknown,
				Msg: "decode answer: " + err.Error(), MayExist: r.placement}
		}
	}
	return nil
}

// failure classifies an answer whose code is not 0. A failed order answers
// code 1 with the order's own sCode in data, which decides.
func (v *Venue) failure(ctx context.Context, r request, resp *http.Response, env envelope, secrets []string) error {
	code, _ := strconv.Atoi(env.Code)
	msg := env.Msg
	var items []struct {
		SCode string `json:"sCode"`
		SMsg  string `json:"sMsg"`
	}
	if json.Unmarshal(env.Data, &items) == nil {
		for _, it := range items {
			if it.SCode != "" && it.SCode != "0" {
				code, _ = strconv.Atoi(it.SCode)
				msg = it.SMsg
				break
			}
		}
	}
	// Redacted before it is logged below.
	msg = venuekit.Redact(msg, secrets...)
	e := &APIError{Venue: "okx", Path: r.path, HTTPStatus: resp.StatusCode, Code: code, Msg: msg, Class: classify(code), MayExist: r.placement}
	if resp.StatusCode >= 500 {
		// Whatever the code, a 5xx leaves the outcome unknown.
		e.Class = ClassUnknown
	}
	switch e.Class {
	case ClassTimestamp:
		v.clock.Forget()
		v.log.WarnContext(ctx, "okx refused the request's timestamp; server time will be resynced", "path", r.path, "code", code, "msg", msg)
	case ClassRateLimited:
		// 50061 is the account's order rate limit over every instrument
		// (Introduction/Rate_Limits/Sub_Account_Rate_Limit.md); any other
		// holds the endpoint on this instrument only (pauseKeys).
		key, _ := r.pauseKeys()
		if code == 50061 {
			_, key = r.pauseKeys()
		}
		v.pauses.Pause(key, v.cfg.Now().Add(venuekit.RetryAfter(resp.Header, DefaultRateLimitGap)))
		v.log.WarnContext(ctx, "okx rate limit: requests paused", "path", r.path, "paused", key, "code", code)
	case ClassCredentials:
		v.log.ErrorContext(ctx, "okx refused the api credentials: check the key, secret and passphrase, the key's trade permission and ip whitelist, and that a demo key is used with HOOX_OKX*_TESTNET; signals fail with 503 until it is fixed",
			slog.String("api_key", "set"), slog.Int("code", code), slog.String("msg", msg))
	}
	return e
}

// secrets are what no error text may carry: the credentials and the
// request's signature.
func (v *Venue) secrets(sign string) []string {
	return []string{v.cfg.APIKey, v.cfg.APISecret, v.cfg.Passphrase, sign, exchange.URLPassword(v.cfg.BaseURL)}
}

// syncTime measures the offset to OKX's clock (GET /api/v5/public/time)
// unless it is younger than TimeSync.
func (v *Venue) syncTime(ctx context.Context) error {
	_, err := v.clock.Ensure(ctx, func(ctx context.Context) (time.Time, error) {
		var res []struct {
			TS string `json:"ts"`
		}
		if err := v.do(ctx, request{method: http.MethodGet, path: "/api/v5/public/time"}, &res); err != nil {
			return time.Time{}, fmt.Errorf("okx: server time: %w", asUnreachable(err))
		}
		if len(res) == 0 {
			return time.Time{}, fmt.Errorf("okx: server time: %w", &APIError{Venue: "okx", Path: "/api/v5/public/time", Class: ClassUnreachable, Msg: "no time in answer"})
		}
		ms, err := strconv.ParseInt(res[0].TS, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("okx: server time: %w", &APIError{Venue: "okx", Path: "/api/v5/public/time", Class: ClassUnreachable, Msg: "bad time in answer"})
		}
		return time.UnixMilli(ms), nil
	})
	return err
}

// serverTime is OKX's time at the local instant at, from the offset
// syncTime keeps (measured first when it is stale).
func (v *Venue) serverTime(ctx context.Context, at time.Time) (time.Time, error) {
	if err := v.syncTime(ctx); err != nil {
		return time.Time{}, err
	}
	return v.clock.At(at), nil
}

// asUnreachable turns a lost answer to a read before the order into
// "nothing was placed": the order itself was not sent.
func asUnreachable(err error) error {
	if e, ok := err.(*APIError); ok && e.Class == ClassUnknown {
		c := *e
		c.Class, c.Msg = ClassUnreachable, e.Msg+" (before the order was sent)"
		return &c
	}
	return err
}
