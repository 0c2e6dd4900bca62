package api_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
)

// sign is what a sender computes: the HMAC of the body alone, or of
// "<timestamp>.<body>" when it sends X-Hoox-Timestamp.
func sign(material string) string {
	mac := hmac.New(sha256.New, []byte(webhookSecret))
	mac.Write([]byte(material))
	return hex.EncodeToString(mac.Sum(nil))
}

// postSigned sends body without a secret in it, with the given headers.
func postSigned(t *testing.T, h http.Handler, body string, headers map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	contract(t, h).ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func unsignedBody(traceID string) string {
	return fmt.Sprintf(`{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":%q}`, traceID)
}

func TestSignedTimestamp(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	stamp := func(d time.Duration) string { return strconv.FormatInt(time.Now().Add(d).Unix(), 10) }

	t.Run("a body-only signature without the header keeps working", func(t *testing.T) {
		body := unsignedBody("sig-body-only")
		r := postSigned(t, b.handler, body, map[string]string{api.HeaderSignature: sign(body)})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	})

	t.Run("a fresh timestamp signed with the body is accepted", func(t *testing.T) {
		body, ts := unsignedBody("sig-stamped"), stamp(0)
		r := postSigned(t, b.handler, body, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: "sha256=" + sign(ts+"."+body)})
		require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	})

	t.Run("a sender a little behind or ahead is accepted", func(t *testing.T) {
		for i, d := range []time.Duration{-20 * time.Second, 20 * time.Second} {
			body, ts := unsignedBody(fmt.Sprintf("sig-skew-%d", i)), stamp(d)
			r := postSigned(t, b.handler, body, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)})
			require.Equal(t, http.StatusOK, r.Status, string(r.Body))
		}
	})

	refusals := []struct {
		name    string
		body    string
		headers func(body string) map[string]string
		detail  string
	}{
		{"a body-only signature beside a timestamp (a captured signature with a fresh header)", unsignedBody("sig-r1"),
			func(body string) map[string]string {
				return map[string]string{api.HeaderTimestamp: stamp(0), api.HeaderSignature: sign(body)}
			}, `"<timestamp>.<body>"`},
		{"a stale timestamp, correctly signed", unsignedBody("sig-r2"),
			func(body string) map[string]string {
				ts := stamp(-time.Hour)
				return map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)}
			}, "old; a signed signal older than 30s is refused as a possible replay"},
		{"a timestamp in the future, correctly signed", unsignedBody("sig-r3"),
			func(body string) map[string]string {
				ts := stamp(time.Hour)
				return map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)}
			}, "in the future; the sender's clock is off by more than 30s"},
		{"a signed stale timestamp swapped for a fresh one", unsignedBody("sig-r4"),
			func(body string) map[string]string {
				return map[string]string{api.HeaderTimestamp: stamp(0), api.HeaderSignature: sign(stamp(-time.Hour) + "." + body)}
			}, "wrong X-Hoox-Signature"},
		{"milliseconds", unsignedBody("sig-r5"),
			func(body string) map[string]string {
				ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
				return map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)}
			}, "must be Unix seconds"},
		{"not a number", unsignedBody("sig-r6"),
			func(body string) map[string]string {
				return map[string]string{api.HeaderTimestamp: "+1700000000", api.HeaderSignature: sign("+1700000000." + body)}
			}, "must be Unix seconds"},
		{"a timestamp without a signature", unsignedBody("sig-r7"),
			func(string) map[string]string { return map[string]string{api.HeaderTimestamp: stamp(0)} },
			"missing or wrong secret"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			r := postSigned(t, b.handler, tt.body, tt.headers(tt.body))
			require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
			p := r.problem(t)
			require.Equal(t, "unauthorized", p["code"])
			require.Contains(t, p["detail"], tt.detail)
			require.NotContains(t, string(r.Body), webhookSecret)
		})
	}

	for _, in := range b.gw.executed() {
		require.False(t, strings.HasPrefix(in.Trace.ID, "k:sig-r"), "refused request %s reached the gateway", in.Trace.ID)
	}
	require.Len(t, b.gw.executed(), 4, "the accepted ones did")
}

// A captured signed request replayed inside the age is a duplicate; its
// order is placed once.
func TestReplayedSignedRequestInsideTheAgeIsADuplicate(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	body := `{"exchange":"paper","symbol":"SOLUSDT","action":"buy","quantity":"2"}` // no key, no timestamp: window mode
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	headers := map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)}
	require.Equal(t, http.StatusOK, postSigned(t, b.handler, body, headers).Status)
	r := postSigned(t, b.handler, body, headers)
	require.Equal(t, http.StatusConflict, r.Status, string(r.Body))
	require.Equal(t, "duplicate", r.problem(t)["code"])
}

func TestSecretInTheBodyIgnoresTheTimestampHeader(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":"sig-secret"}`, webhookSecret)
	r := postSigned(t, b.handler, body, map[string]string{api.HeaderTimestamp: "1"})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
}

// B1 of issue 17: the Idempotency-Key header is not signed, so it must not
// pick the trace of a signed request. Before, a captured signed request
// resent with a fresh header key was a new signal each time, each an order.
func TestCapturedSignedRequestResentWithAFreshIdempotencyKeyPlacesNothing(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	body := `{"exchange":"paper","symbol":"SOLUSDT","action":"buy","quantity":"2","trace_id":"captured-1"}`
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	captured := map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)}
	require.Equal(t, http.StatusOK, postSigned(t, b.handler, body, captured).Status)

	for i := range 3 {
		replay := map[string]string{"Idempotency-Key": fmt.Sprintf("fresh-%d", i)}
		for k, v := range captured {
			replay[k] = v
		}
		r := postSigned(t, b.handler, body, replay)
		require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
		p := r.problem(t)
		require.Equal(t, "invalid_signal", p["code"])
		require.Contains(t, p["detail"], "Idempotency-Key")
	}
	// The same request with its own key is what it always was: a duplicate.
	require.Equal(t, http.StatusConflict, postSigned(t, b.handler, body, captured).Status)
	require.Equal(t, 1, orderCount(t, b), "one captured request, one order")
}

// orderCount is how many orders hoox recorded.
func orderCount(t *testing.T, b *adminBundle) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT count(*) FROM orders").Scan(&n))
	return n
}

// What picks the trace of a signed request must be inside what it signs:
// a header key is accepted beside a signature only when it repeats the
// signed body's key, and it never contradicts the body's key, whatever
// the credential.
func TestIdempotencyKeyHeaderBesideTheBody(t *testing.T) {
	t.Parallel()
	stamp := func() string { return strconv.FormatInt(time.Now().Unix(), 10) }
	secretBody := func(extra string) string {
		return fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1"%s}`, webhookSecret, extra)
	}
	tests := []struct {
		name    string
		body    string
		headers func(body string) map[string]string
		status  int
		detail  string
		traceID string
	}{
		{"signed body, header key differing from the body's", unsignedBody("body-1"), func(body string) map[string]string {
			return map[string]string{api.HeaderSignature: sign(body), "Idempotency-Key": "other-1"}
		}, http.StatusBadRequest, "differs from the body's trace_id", ""},
		{"signed with a timestamp, body without a key, header key", `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1"}`,
			func(body string) map[string]string {
				ts := stamp()
				return map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body), "Idempotency-Key": "hdr-2"}
			}, http.StatusBadRequest, "not covered by X-Hoox-Signature", ""},
		{"signed body-only, body with a timestamp but no key, header key", `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1","timestamp":1700000000000}`,
			func(body string) map[string]string {
				return map[string]string{api.HeaderSignature: sign(body), "Idempotency-Key": "hdr-3"}
			}, http.StatusBadRequest, "put the key in the signed body as trace_id", ""},
		{"signed body, header repeating the body's key", unsignedBody("body-4"), func(body string) map[string]string {
			return map[string]string{api.HeaderSignature: sign(body), "Idempotency-Key": "body-4"}
		}, http.StatusOK, "", "k:body-4"},
		{"secret in the body, header key differing from the body's", secretBody(`,"trace_id":"body-5"`), func(string) map[string]string {
			return map[string]string{"Idempotency-Key": "other-5"}
		}, http.StatusBadRequest, "differs from the body's trace_id", ""},
		{"secret in the body, header key and no body key", secretBody(""), func(string) map[string]string {
			return map[string]string{"Idempotency-Key": "hdr-6"}
		}, http.StatusOK, "", "k:hdr-6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupWebhook(t)
			r := postSigned(t, b.handler, tt.body, tt.headers(tt.body))
			require.Equal(t, tt.status, r.Status, string(r.Body))
			if tt.status != http.StatusOK {
				p := r.problem(t)
				require.Equal(t, "invalid_signal", p["code"])
				require.Contains(t, p["detail"], "Idempotency-Key")
				require.Contains(t, p["detail"], tt.detail)
				require.Empty(t, b.gw.executed(), "a refused request reached the gateway")
				return
			}
			executed := b.gw.executed()
			require.Len(t, executed, 1)
			require.Equal(t, tt.traceID, executed[0].Trace.ID)
		})
	}
}

// A body signed without X-Hoox-Timestamp stays valid forever. With a key
// or a timestamp in the body, a resend is a duplicate for HOOX_TRACE_TTL;
// with neither, each resend after the dedup window would be a new order,
// so that case is refused: it must be signed with a timestamp.
func TestBodyOnlySignatureOfAWindowSignalIsRefused(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t)
	window := `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1"}`
	r := postSigned(t, b.handler, window, map[string]string{api.HeaderSignature: sign(window)})
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	p := r.problem(t)
	require.Equal(t, "unauthorized", p["code"])
	require.Contains(t, p["detail"], "replayed")
	require.Contains(t, p["detail"], api.HeaderTimestamp)
	require.Empty(t, b.gw.executed())

	// Signed with a timestamp, or with a key or a timestamp in the body, it
	// goes through.
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r = postSigned(t, b.handler, window, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + window)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	derived := `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"1","timestamp":1700000000000}`
	r = postSigned(t, b.handler, derived, map[string]string{api.HeaderSignature: sign(derived)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	keyed := unsignedBody("window-keyed")
	r = postSigned(t, b.handler, keyed, map[string]string{api.HeaderSignature: sign(keyed)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Len(t, b.gw.executed(), 3)
}

// HOOX_REQUIRE_SIGNED_TIMESTAMP closes the last replay: a keyed body signed
// without a timestamp could execute again once its trace has expired.
func TestRequireSignedTimestamp(t *testing.T) {
	t.Parallel()
	b := setupWebhook(t, func(c *api.Config) { c.RequireSignedTimestamp = true })
	body := unsignedBody("req-ts-1")
	r := postSigned(t, b.handler, body, map[string]string{api.HeaderSignature: sign(body)})
	require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
	p := r.problem(t)
	require.Equal(t, "unauthorized", p["code"])
	require.Contains(t, p["detail"], api.HeaderTimestamp)
	require.Empty(t, b.gw.executed())

	ts := strconv.FormatInt(time.Now().Unix(), 10)
	r = postSigned(t, b.handler, body, map[string]string{api.HeaderTimestamp: ts, api.HeaderSignature: sign(ts + "." + body)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	// The secret in the body is a credential of its own; the setting is
	// about signatures.
	r = postSigned(t, b.handler, sig(`"trace_id":"req-ts-2"`), nil)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Len(t, b.gw.executed(), 2)
}
