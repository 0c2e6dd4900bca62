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
