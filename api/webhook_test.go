package api_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// fakeGateway stands in for the gateway (api.Executor): it records every
// input it is asked to execute and answers dispatched, or the refusal it
// was told to give, so the webhook's guards and answers are tested without
// a database.
type fakeGateway struct {
	mu     sync.Mutex
	inputs []gateway.Input
	err    error
}

func (f *fakeGateway) Execute(_ context.Context, in gateway.Input) (*gateway.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputs = append(f.inputs, in)
	if f.err != nil {
		return nil, f.err
	}
	return &gateway.Outcome{TraceID: in.Trace.ID, Status: db.TraceDispatched, ReceivedAt: time.Now()}, nil
}

// refuse makes every later execution answer err.
func (f *fakeGateway) refuse(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// executed is every input that got past the guards.
func (f *fakeGateway) executed() []gateway.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]gateway.Input(nil), f.inputs...)
}

// webhookBundle is the HTTP server in front of a fake gateway.
type webhookBundle struct {
	handler http.Handler
	gw      *fakeGateway
}

func setupWebhook(t *testing.T, mutate ...func(*api.Config)) *webhookBundle {
	t.Helper()
	cfg := api.Config{WebhookSecret: webhookSecret}
	for _, m := range mutate {
		m(&cfg)
	}
	b := &webhookBundle{gw: &fakeGateway{}}
	b.handler = api.New(cfg, api.Deps{Gateway: b.gw}).Handler()
	return b
}

// webhookRequest is one POST /webhook. contentType "" means
// application/json and "-" none at all; remote is the peer address.
type webhookRequest struct {
	body, contentType, remote string
	headers                   []string
}

func (b *webhookBundle) post(t *testing.T, r webhookRequest) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(r.body))
	switch r.contentType {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", r.contentType)
	}
	for i := 0; i+1 < len(r.headers); i += 2 {
		req.Header.Set(r.headers[i], r.headers[i+1])
	}
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	rec := httptest.NewRecorder()
	contract(t, b.handler).ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// sig builds a signal body carrying the secret; extra is raw JSON members
// appended to it. A symbol in extra replaces the default one.
func sig(extra string) string {
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","action":"buy","quantity":"0.5"`, webhookSecret)
	if !strings.Contains(extra, `"symbol"`) {
		body += `,"symbol":"BTCUSDT"`
	}
	if extra != "" {
		body += "," + extra
	}
	return body + "}"
}

// hostile is one malformed or hostile request and the answer it must get.
type hostile struct {
	name        string
	body        string
	contentType string
	headers     []string
	status      int
	code        string
}

func hostileRequests() []hostile {
	s := webhookSecret
	valid := func(extra string) string { return sig(extra) }
	with := func(field, raw string) string {
		// Replace or add one member of an otherwise valid signal.
		base := map[string]string{"secret": fmt.Sprintf("%q", s), "exchange": `"paper"`, "symbol": `"BTCUSDT"`, "action": `"buy"`, "quantity": `"1"`}
		base[field] = raw
		var parts []string
		for _, k := range []string{"secret", "exchange", "symbol", "action", "quantity"} {
			parts = append(parts, fmt.Sprintf("%q:%s", k, base[k]))
		}
		if _, ok := map[string]bool{"secret": true, "exchange": true, "symbol": true, "action": true, "quantity": true}[field]; !ok {
			parts = append(parts, fmt.Sprintf("%q:%s", field, raw))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	bad := func(name, body string) hostile {
		return hostile{name: name, body: body, status: http.StatusBadRequest, code: "invalid_signal"}
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	sqlFrag := `'; DROP TABLE trace_ids; --`
	// An unknown exchange is the gateway's refusal (it knows the venues):
	// see gateway's TestUnknownExchangeIsInvalidAndTouchesNothing.
	return []hostile{
		bad("empty body", ""),
		bad("whitespace body", "   \n\t "),
		bad("truncated object", `{"secret":"`+s+`","exchange":"paper"`),
		bad("truncated string", `{"secret":"`+s),
		bad("trailing garbage", valid("")+"x"),
		bad("two objects", valid("")+valid("")),
		bad("array at top", "["+valid("")+"]"),
		bad("string at top", `"hello"`),
		bad("number at top", `42`),
		bad("null at top", `null`),
		bad("single quotes", strings.ReplaceAll(valid(""), `"`, `'`)),
		bad("unquoted keys", `{secret:"x"}`),
		bad("trailing comma", strings.TrimSuffix(valid(""), "}")+",}"),
		bad("comment", "// hi\n"+valid("")),
		bad("invalid utf-8", "{\"secret\":\""+s+"\",\"symbol\":\"\xff\xfe\"}"),
		bad("deeply nested arrays", strings.TrimSuffix(valid(""), "}")+`,"junk":`+deep+"}"),
		bad("duplicate key", strings.TrimSuffix(valid(""), "}")+`,"quantity":"2"}`),
		bad("conflicting aliases", strings.TrimSuffix(valid(""), "}")+`,"qty":"2"}`),
		bad("missing exchange", `{"secret":"`+s+`","symbol":"BTCUSDT","action":"buy","quantity":"1"}`),
		bad("missing symbol", `{"secret":"`+s+`","exchange":"paper","action":"buy","quantity":"1"}`),
		bad("missing action", `{"secret":"`+s+`","exchange":"paper","symbol":"BTCUSDT","quantity":"1"}`),
		bad("missing quantity", `{"secret":"`+s+`","exchange":"paper","symbol":"BTCUSDT","action":"buy"}`),
		bad("exchange as number", with("exchange", `5`)),
		bad("symbol as number", with("symbol", `5`)),
		bad("symbol as object", with("symbol", `{"a":1}`)),
		bad("empty symbol", with("symbol", `""`)),
		bad("long symbol", with("symbol", `"`+strings.Repeat("A", 33)+`"`)),
		bad("control char in symbol", with("symbol", `"BTC\u0000USDT"`)),
		bad("newline in symbol", with("symbol", `"BTC\nUSDT"`)),
		bad("rtl mark in symbol", with("symbol", "\"BTC\u200fUSDT\"")),
		bad("sql in symbol", with("symbol", fmt.Sprintf("%q", sqlFrag))),
		bad("unknown action", with("action", `"yolo"`)),
		bad("sql in action", with("action", fmt.Sprintf("%q", sqlFrag))),
		bad("action as bool", with("action", `true`)),
		bad("zero quantity", with("quantity", `0`)),
		bad("negative quantity", with("quantity", `-1`)),
		bad("negative quantity string", with("quantity", `"-0.5"`)),
		bad("huge quantity", with("quantity", `123456789012345678901234567890`)),
		bad("1e400 quantity", with("quantity", `1e400`)),
		bad("too many decimals", with("quantity", `0.1234567890123456789`)),
		bad("NaN quantity", with("quantity", `"NaN"`)),
		bad("Infinity quantity", with("quantity", `"Infinity"`)),
		bad("-Infinity quantity", with("quantity", `"-Infinity"`)),
		bad("hex quantity", with("quantity", `"0x10"`)),
		bad("quantity as bool", with("quantity", `true`)),
		bad("quantity as array", with("quantity", `[1]`)),
		bad("sql in quantity", with("quantity", fmt.Sprintf("%q", sqlFrag))),
		bad("zero price", with("price", `0`)),
		bad("negative price", with("price", `-100`)),
		bad("NaN price", with("price", `"NaN"`)),
		bad("limit without price", with("order_type", `"limit"`)),
		bad("unknown order type", with("order_type", `"stop"`)),
		bad("leverage zero", with("leverage", `0`)),
		bad("leverage too high", with("leverage", `126`)),
		bad("fractional leverage", with("leverage", `2.5`)),
		bad("bad timestamp", with("timestamp", `"yesterday"`)),
		bad("sql in timestamp", with("timestamp", fmt.Sprintf("%q", sqlFrag))),
		bad("300-char key", with("trace_id", `"`+strings.Repeat("k", 300)+`"`)),
		bad("empty key", with("trace_id", `""`)),
		bad("control char in key", with("trace_id", `"a\u0001b"`)),
		bad("key as object", with("trace_id", `{"x":1}`)),
		bad("test as string word", with("test", `"maybe"`)),
		bad("long strategy", with("strategy", `"`+strings.Repeat("s", 300)+`"`)),
		bad("control char in comment", with("comment", `"a\u0007b"`)),
		{name: "300-char Idempotency-Key header", body: valid(""), headers: []string{"Idempotency-Key", strings.Repeat("h", 300)}, status: 400, code: "invalid_signal"},
		{name: "no secret", body: `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1"}`, status: 401, code: "unauthorized"},
		{name: "wrong secret", body: strings.Replace(valid(""), s, "nope", 1), status: 401, code: "unauthorized"},
		{name: "secret as number", body: strings.Replace(valid(""), `"`+s+`"`, "12345", 1), status: 401, code: "unauthorized"},
		{name: "sql in secret", body: strings.Replace(valid(""), s, sqlFrag, 1), status: 401, code: "unauthorized"},
		{name: "bad signature", body: `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1"}`, headers: []string{"X-Hoox-Signature", "deadbeef"}, status: 401, code: "unauthorized"},
		{name: "form-encoded body", body: "secret=" + s + "&exchange=paper", contentType: "application/x-www-form-urlencoded", status: 415, code: "unsupported_media_type"},
		{name: "xml body", body: "<signal/>", contentType: "application/xml", status: 415, code: "unsupported_media_type"},
		{name: "no content type", body: valid(""), contentType: "-", status: 415, code: "unsupported_media_type"},
		{name: "unparsable content type", body: valid(""), contentType: "application/json; =", status: 415, code: "unsupported_media_type"},
		{name: "10 MB body", body: `{"pad":"` + strings.Repeat("x", 10<<20) + `"}`, status: 413, code: "payload_too_large"},
	}
}

// Every malformed or hostile request is refused with its problem, and none
// reaches the gateway; the server keeps serving.
func TestHostileRequestsAreRefusedBeforeTheGateway(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	cases := hostileRequests()
	require.GreaterOrEqual(t, len(cases), 60)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := b.post(t, webhookRequest{body: tc.body, contentType: tc.contentType, headers: tc.headers})
			require.Equal(t, tc.status, r.Status, string(r.Body))
			p := r.problem(t)
			require.Equal(t, tc.code, p["code"], string(r.Body))
			require.NotEmpty(t, p["detail"])
			require.NotContains(t, string(r.Body), webhookSecret)
		})
	}
	require.Empty(t, b.gw.executed(), "no refused request reached the gateway")
	ok := b.post(t, webhookRequest{body: sig(`"trace_id":"after-the-storm"`)})
	require.Equal(t, http.StatusOK, ok.Status, "the server keeps serving: %s", ok.Body)
}

// A body over MaxBody is refused from its Content-Length, before it is
// read, and from its length when it was sent without one.
func TestBodyLimit(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t, func(c *api.Config) { c.MaxBody = 200 })
	long := sig(`"trace_id":"long","comment":"` + strings.Repeat("c", 200) + `"`)
	r := b.post(t, webhookRequest{body: long})
	require.Equal(t, http.StatusRequestEntityTooLarge, r.Status, string(r.Body))
	require.Contains(t, r.problem(t)["detail"], "the limit is 200")

	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(long))
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1 // chunked: the length is only known by reading
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	require.Empty(t, b.gw.executed())

	require.Equal(t, http.StatusOK, b.post(t, webhookRequest{body: sig(`"trace_id":"short"`)}).Status)
}

// TradingView sends text/plain when it does not recognise a message as
// JSON, and some tools prepend a UTF-8 BOM: both execute.
func TestTextPlainAndBOMAreAccepted(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	r := b.post(t, webhookRequest{body: sig(`"trace_id":"tv-text"`), contentType: "text/plain; charset=utf-8"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = b.post(t, webhookRequest{body: "\ufeff" + sig(`"trace_id":"bom-1"`)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = b.post(t, webhookRequest{body: sig(`"trace_id":"vendor"`), contentType: "application/vnd.tv+json"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Len(t, b.gw.executed(), 3)
}

// A body-only signature replaces the secret; a body changed after signing
// is refused.
func TestBodySignatureReplacesTheSecret(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	body := `{"exchange":"paper","symbol":"ETHUSDT","action":"sell","quantity":"1.5","trace_id":"signed-1"}`
	r := b.post(t, webhookRequest{body: body, headers: []string{api.HeaderSignature, sign(body)}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	executed := b.gw.executed()
	require.Len(t, executed, 1)
	require.Equal(t, "1.5", executed[0].Signal.Quantity.String())

	tampered := strings.Replace(body, `"1.5"`, `"15"`, 1)
	r = b.post(t, webhookRequest{body: tampered, headers: []string{api.HeaderSignature, sign(body)}})
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	require.Len(t, b.gw.executed(), 1)
}

// The allow-list sees the peer, and behind trusted proxies the rightmost
// hop of X-Forwarded-For that is not itself a proxy; that address is what
// the gateway records.
func TestAllowedIPsAndTrustedProxies(t *testing.T) {
	t.Parallel()
	tradingView, err := api.ParseIPList("tradingview")
	require.NoError(t, err)
	const loopback, tvAddr = "127.0.0.1:40000", "52.89.214.238"

	direct := setupWebhook(t, func(c *api.Config) { c.AllowedIPs = tradingView })
	r := direct.post(t, webhookRequest{body: sig(`"trace_id":"ip-1"`), remote: loopback})
	require.Equal(t, http.StatusForbidden, r.Status, string(r.Body))
	require.Equal(t, "forbidden", r.problem(t)["code"])
	r = direct.post(t, webhookRequest{body: sig(`"trace_id":"ip-1"`), remote: loopback, headers: []string{"X-Forwarded-For", tvAddr}})
	require.Equal(t, http.StatusForbidden, r.Status, "X-Forwarded-For from an untrusted peer is ignored: %s", r.Body)
	r = direct.post(t, webhookRequest{body: sig(`"trace_id":"ip-direct"`), remote: tvAddr + ":443"})
	require.Equal(t, http.StatusOK, r.Status, "a listed peer is allowed: %s", r.Body)

	proxied := setupWebhook(t, func(c *api.Config) {
		c.AllowedIPs = tradingView
		c.TrustedProxies = api.IPList{netip.MustParsePrefix("127.0.0.0/8")}
	})
	r = proxied.post(t, webhookRequest{body: sig(`"trace_id":"ip-2"`), remote: loopback, headers: []string{"X-Forwarded-For", tvAddr}})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = proxied.post(t, webhookRequest{body: sig(`"trace_id":"ip-3"`), remote: loopback, headers: []string{"X-Forwarded-For", tvAddr + ", 203.0.113.9"}})
	require.Equal(t, http.StatusForbidden, r.Status, "the rightmost untrusted hop is the sender: %s", r.Body)
	r = proxied.post(t, webhookRequest{body: sig(`"trace_id":"ip-4"`), remote: loopback, headers: []string{"X-Forwarded-For", "203.0.113.9, " + tvAddr + ", 127.0.0.2"}})
	require.Equal(t, http.StatusOK, r.Status, "trusted hops are skipped, a forged leftmost hop is not believed: %s", r.Body)

	executed := proxied.gw.executed()
	require.Len(t, executed, 2)
	for _, in := range executed {
		require.Equal(t, tvAddr, in.SourceIP.String())
	}
}

// B10 of issue 17: proxies may write a hop with its port (203.0.113.7:4711,
// [2001:db8::1]:443). Such a hop is an address like any other: it neither
// stops the right-to-left scan at a trusted proxy (which made every signal
// look as if the proxy sent it) nor hides the sender. A hop that is no
// address at all stops the scan at the last hop believed.
func TestForwardedHopsWithPorts(t *testing.T) {
	t.Parallel()
	const peer, sender, sender6 = "127.0.0.1:40000", "52.89.214.238", "2001:db8::1"
	b := setupWebhook(t, func(c *api.Config) {
		c.TrustedProxies = api.IPList{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	})
	tests := []struct {
		xff, want string
	}{
		{sender + ":4711", sender},
		{"[" + sender6 + "]:443", sender6},
		{"[" + sender6 + "]", sender6},
		{sender6, sender6},
		{"203.0.113.9, " + sender + ", 10.0.0.5:8080", sender},
		{"203.0.113.9, " + sender + ":1234, [fd00::7]:443, 10.0.0.5", sender},
		{"[::ffff:" + sender + "]:80, 10.0.0.5:8080", sender},
		// No address where the sender should be: the scan stops at the
		// last proxy it believed, never at a hop further left that the
		// sender could have written.
		{sender + ", not-an-address, 10.0.0.5:8080", "10.0.0.5"},
		{sender + ", 10.0.0.5:99999", "127.0.0.1"},
	}
	for i, tt := range tests {
		r := b.post(t, webhookRequest{body: sig(fmt.Sprintf(`"trace_id":"xff-%d"`, i)), remote: peer, headers: []string{"X-Forwarded-For", tt.xff}})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		executed := b.gw.executed()
		require.Equal(t, tt.want, executed[len(executed)-1].SourceIP.String(), "X-Forwarded-For: %s", tt.xff)
	}
}

// Over the rate limit a signal is refused with 429 and Retry-After before
// it reaches the gateway.
func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t, func(c *api.Config) { c.RateLimit, c.RateBurst = 0.001, 1 })
	require.Equal(t, http.StatusOK, b.post(t, webhookRequest{body: sig(`"trace_id":"rl-1"`)}).Status)
	r := b.post(t, webhookRequest{body: sig(`"trace_id":"rl-2"`)})
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))
	require.Equal(t, "rate_limited", r.problem(t)["code"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Len(t, b.gw.executed(), 1)
}

// A refused signal spends no token: a sender with a wrong secret cannot use
// up the limit of the real one.
func TestUnauthenticatedSignalsDoNotSpendTheRateLimit(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t, func(c *api.Config) { c.RateLimit, c.RateBurst = 0.001, 1 })
	for range 5 {
		r := b.post(t, webhookRequest{body: strings.Replace(sig(`"trace_id":"x"`), webhookSecret, "nope", 1)})
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	}
	require.Equal(t, http.StatusOK, b.post(t, webhookRequest{body: sig(`"trace_id":"real"`)}).Status)
}

// Each refusal the gateway can give leaves as its status, problem code and
// headers, with the members a sender branches on, and never with its
// internal cause.
func TestGatewayRefusalsBecomeTheirProblems(t *testing.T) {
	t.Parallel()
	orderID := uuid.MustParse("0190a7e4-0000-7000-8000-000000000001")
	clientID := "hx0190a7e400007000800000000001"
	firstSeen := time.Date(2025, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	original := &gateway.Original{TraceID: "k:t1", Status: db.TraceDispatched, OrderID: &orderID, ClientOrderID: &clientID, FirstSeen: firstSeen}
	reason := "insufficient balance"
	rejected := &gateway.Outcome{TraceID: "k:t1", Status: db.TraceRejected, ReceivedAt: firstSeen, Order: &db.OrderRow{
		ID: orderID, TraceID: "k:t1", ClientOrderID: clientID, Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.5"), Mode: "live", Status: "rejected", RejectReason: &reason}}
	cause := errors.New("dial tcp 10.9.8.7:5432: connection refused")

	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter string
		check      func(t *testing.T, p map[string]any)
	}{
		{"duplicate with the original", &gateway.Error{Code: codes.Duplicate, Detail: "trace k:t1 was already received", Original: original},
			http.StatusConflict, "duplicate", "", func(t *testing.T, p map[string]any) {
				require.Equal(t, true, p["duplicate"])
				require.Equal(t, "k:t1", p["trace_id"])
				o := p["original"].(map[string]any)
				require.Equal(t, "dispatched", o["status"])
				require.Equal(t, orderID.String(), o["order_id"])
				require.Equal(t, clientID, o["client_order_id"])
				require.Equal(t, "2025-01-02T02:04:05Z", o["first_seen"], "in UTC")
			}},
		{"in progress", &gateway.Error{Code: codes.InProgress, Detail: "the first attempt is still running", RetryAfter: 1500 * time.Millisecond},
			http.StatusConflict, "in_progress", "2", func(t *testing.T, p map[string]any) {
				require.NotContains(t, p, "duplicate")
			}},
		{"key reused", &gateway.Error{Code: codes.KeyReused, Detail: "trace k:t1 was already used for a different signal", Original: original},
			http.StatusUnprocessableEntity, "key_reused", "", func(t *testing.T, p map[string]any) {
				require.NotContains(t, p, "duplicate", "a different signal is no duplicate")
				require.Equal(t, "dispatched", p["original"].(map[string]any)["status"])
			}},
		{"order rejected", &gateway.Error{Code: codes.OrderRejected, Detail: "venue paper refused the order: " + reason, Outcome: rejected},
			http.StatusUnprocessableEntity, "order_rejected", "", func(t *testing.T, p map[string]any) {
				require.Equal(t, "k:t1", p["trace_id"])
				o := p["order"].(map[string]any)
				require.Equal(t, "rejected", o["status"])
				require.Equal(t, reason, o["reject_reason"])
				require.Equal(t, "0.5", o["quantity"], "decimals as strings")
			}},
		{"kill switch", &gateway.Error{Code: codes.KillSwitch, Detail: "trading is halted", RetryAfter: time.Minute},
			http.StatusServiceUnavailable, "kill_switch", "60", nil},
		{"unavailable", &gateway.Error{Code: codes.Unavailable, Detail: "the database is unavailable; nothing was placed", RetryAfter: 5 * time.Second, Err: cause},
			http.StatusServiceUnavailable, "unavailable", "5", func(t *testing.T, p map[string]any) {
				require.Equal(t, "the database is unavailable; nothing was placed", p["detail"])
			}},
		{"an unreachable database, untranslated", fmt.Errorf("claim: %w: %w", db.ErrUnavailable, cause),
			http.StatusServiceUnavailable, "unavailable", "5", nil},
		{"anything else is internal", cause, http.StatusInternalServerError, "internal", "", func(t *testing.T, p map[string]any) {
			require.Contains(t, p["detail"], "see the server log for request")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupWebhook(t)
			b.gw.refuse(tt.err)
			r := b.post(t, webhookRequest{body: sig(`"trace_id":"t1"`)})
			require.Equal(t, tt.status, r.Status, string(r.Body))
			require.Equal(t, tt.retryAfter, r.Header.Get("Retry-After"))
			p := r.problem(t)
			require.Equal(t, tt.code, p["code"])
			require.EqualValues(t, tt.status, p["status"])
			require.Equal(t, "urn:hoox:problem:"+tt.code, p["type"])
			require.Equal(t, "/webhook", p["instance"])
			require.NotEmpty(t, p["detail"])
			require.NotContains(t, string(r.Body), "10.9.8.7", "the cause is logged, never shown")
			require.NotContains(t, string(r.Body), webhookSecret)
			if tt.check != nil {
				tt.check(t, p)
			}
			require.Len(t, b.gw.executed(), 1)
		})
	}
}
