package api_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// A trace ID, a listing filter, a cursor or an admin body string that
// Postgres cannot store as text (a NUL, invalid UTF-8) or that holds a
// control character is the client's mistake: 400 invalid_request, not a
// 500 internal error from the query.
func TestAdminTextPostgresCannotStoreIsA400(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	// A next_cursor whose ID carries a NUL, as a forged cursor can.
	nulCursor := "eyJrIjoidHJhY2VzIiwidCI6IjIwMjUtMDEtMDJUMTU6MDQ6MDVaIiwiaSI6ImtcdTAwMDAifQ"
	cases := []struct{ method, target, body string }{
		{http.MethodGet, "/admin/traces/k:%FF", ""},
		{http.MethodGet, "/admin/traces/k:a%00b", ""},
		{http.MethodDelete, "/admin/traces/k:%FF", ""},
		{http.MethodGet, "/admin/traces?exchange=%00", ""},
		{http.MethodGet, "/admin/traces?symbol=%FF", ""},
		{http.MethodGet, "/admin/traces?fanout=k:%00", ""},
		{http.MethodGet, "/admin/traces?cursor=" + nulCursor, ""},
		{http.MethodGet, "/admin/orders?exchange=%00", ""},
		{http.MethodGet, "/admin/ledger?strategy=%00", ""},
		{http.MethodGet, "/admin/ledger?exchange=%FF", ""},
		{http.MethodGet, "/admin/ledger?symbol=a%00", ""},
		{http.MethodPut, "/admin/kill-switch", `{"engaged":true,"reason":"a\u0000b"}`},
		{http.MethodPut, "/admin/kill-switch", `{"engaged":true,"reason":"line\nforged"}`},
		{http.MethodDelete, "/admin/traces/k:held", `{"reason":"a\u0000b"}`},
		{http.MethodPut, "/admin/ledger", `{"exchange":"paper","mode":"live","symbol":"BTC","strategy":"s\u0000","quantity":"1"}`},
		{http.MethodPut, "/admin/ledger", `{"exchange":"paper","mode":"live","symbol":"BTC","strategy":"","quantity":"1","reason":"\u0000"}`},
		{http.MethodPut, "/admin/ledger", `{"exchange":"pa\u0000per","mode":"live","symbol":"BTC","strategy":"","quantity":"1"}`},
		{http.MethodPut, "/admin/ledger", `{"exchange":"paper","mode":"live","symbol":"BTC\u0000","strategy":"","quantity":"1"}`},
	}
	for _, tc := range cases {
		r := b.do(t, tc.method, tc.target, tc.body)
		if assert.Equal(t, http.StatusBadRequest, r.Status, "%s %s %s: %s", tc.method, tc.target, tc.body, r.Body) {
			assert.Equal(t, "invalid_request", r.problem(t)["code"], "%s %s", tc.method, tc.target)
		}
	}
	k, err := db.GetKillSwitch(t.Context(), b.pool)
	require.NoError(t, err)
	require.False(t, k.Engaged, "no refused body engaged the kill switch")
	entries, _ := b.do(t, http.MethodGet, "/admin/ledger", "").json(t)["entries"].([]any)
	require.Empty(t, entries, "no refused body set a ledger entry")
}

// PUT /admin/kill-switch with "engaged" twice is ambiguous (RFC 7493: which
// value wins is implementation-defined), and encoding/json matches keys
// regardless of case, so "Engaged" is the same key. The webhook refuses
// duplicate keys for that reason; an admin body that says "engaged": true
// must not release a halted switch either.
func TestKillSwitchBodyWithAKeyTwiceIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	r := b.do(t, http.MethodPut, "/admin/kill-switch", `{"engaged":true,"reason":"halt"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))

	for _, body := range []string{
		`{"engaged":true,"reason":"still halted","engaged":false}`,
		`{"engaged":true,"Engaged":false}`,
		`{"engaged":true,"ENGAGED":false}`,
		`{"engaged":true,"eng\u0061ged":false}`,
		`{"engaged":true,"reason":"a","reaſon":"b"}`, // U+017F folds to s, as encoding/json matches it
	} {
		r = b.do(t, http.MethodPut, "/admin/kill-switch", body)
		k, err := db.GetKillSwitch(t.Context(), b.pool)
		require.NoError(t, err)
		require.True(t, k.Engaged, "body %s released the kill switch (answer %d %s)", body, r.Status, r.Body)
		require.Equal(t, http.StatusBadRequest, r.Status, "body %s: %s", body, r.Body)
		require.Equal(t, "invalid_request", r.problem(t)["code"])
	}
}

// An admin body with invalid UTF-8 would be rewritten (U+FFFD) by
// encoding/json and stored, where the webhook refuses it: the audit would
// keep text the operator never sent.
func TestAdminBodyWithInvalidUTF8IsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	r := b.do(t, http.MethodPut, "/admin/kill-switch", "{\"engaged\":true,\"reason\":\"bad \xff byte\"}")
	k, err := db.GetKillSwitch(t.Context(), b.pool)
	require.NoError(t, err)
	require.False(t, k.Engaged, "invalid UTF-8 body engaged the switch with reason %q (answer %d)", k.Reason, r.Status)
	require.Equal(t, http.StatusBadRequest, r.Status, string(r.Body))
}

// Decoder.More is false before a stray ']' or '}', so a body with
// trailing junk must be caught by reading to the end: malformed JSON never
// engages the kill switch.
func TestAdminBodyWithDataAfterTheObjectIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	for _, body := range []string{`{"engaged":true,"reason":"x"}]`, `{"engaged":true}}`, `{"engaged":true} {}`, `{"engaged":true} x`} {
		r := b.do(t, http.MethodPut, "/admin/kill-switch", body)
		k, err := db.GetKillSwitch(t.Context(), b.pool)
		require.NoError(t, err)
		require.False(t, k.Engaged, "body %s engaged the kill switch (answer %d %s)", body, r.Status, r.Body)
		require.Equal(t, http.StatusBadRequest, r.Status, "body %s: %s", body, r.Body)
	}
	r := b.do(t, http.MethodPut, "/admin/kill-switch", "{\"engaged\":true}\n \t")
	require.Equal(t, http.StatusOK, r.Status, "trailing whitespace is fine: %s", r.Body)
}

// POST /admin/purge takes no options, so a body such as {"dry_run": true}
// is refused rather than answered with a real purge; an empty body or {}
// still queues one.
func TestPurgeRefusesABodyItDoesNotRead(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	for _, body := range []string{`{"dry_run":true}`, `{"older_than":"1h"}`, `[]`, `{} {}`} {
		r := b.do(t, http.MethodPost, "/admin/purge", body)
		require.Equal(t, http.StatusBadRequest, r.Status, "body %s: %s", body, r.Body)
	}
	var queued int
	require.NoError(t, b.pool.QueryRow(t.Context(), "SELECT count(*) FROM river_job").Scan(&queued))
	require.Zero(t, queued, "a refused body queued no purge")
	for _, body := range []string{"", "{}"} {
		r := b.do(t, http.MethodPost, "/admin/purge", body)
		require.Equal(t, http.StatusAccepted, r.Status, "body %q: %s", body, r.Body)
	}
}

// Every admin route that reads a body refuses one in a content coding as
// the webhook does (415 unsupported_media_type, Accept-Encoding: identity)
// and changes nothing: a JSON body labelled gzip was read as plain JSON,
// so a client whose body was in fact compressed got a misleading 400 and
// one whose label was wrong had its change made.
func TestAdminBodyWithAContentEncodingIs415AndChangesNothing(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	b.insertTrace(t, "k:held", db.TraceDispatched, "paper", "BTCUSDT", "live", time.Now(), time.Now().Add(time.Hour))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, err := w.Write([]byte(`{"engaged": true, "reason": "compressed"}`))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	send := func(method, target, body, encoding string) response {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", encoding)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		rec := httptest.NewRecorder()
		contract(t, b.handler).ServeHTTP(rec, req)
		return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	}
	for _, r := range []struct{ name, method, target, body, encoding string }{
		{"kill switch, gzip", http.MethodPut, "/admin/kill-switch", gz.String(), "gzip"},
		{"kill switch, plain JSON labelled gzip", http.MethodPut, "/admin/kill-switch", `{"engaged": true, "reason": "labelled"}`, "gzip"},
		{"kill switch, identity then br", http.MethodPut, "/admin/kill-switch", `{"engaged": true}`, "identity, br"},
		{"ledger set", http.MethodPut, "/admin/ledger",
			`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`, "gzip"},
		{"trace release", http.MethodDelete, "/admin/traces/k:held", `{"reason": "resend"}`, "deflate"},
		{"purge", http.MethodPost, "/admin/purge", `{}`, "gzip"},
	} {
		res := send(r.method, r.target, r.body, r.encoding)
		require.Equal(t, http.StatusUnsupportedMediaType, res.Status, "%s: %s", r.name, res.Body)
		p := res.problem(t)
		require.Equal(t, "unsupported_media_type", p["code"], r.name)
		require.Contains(t, p["detail"], "Content-Encoding", r.name)
		require.Equal(t, "identity", res.Header.Get("Accept-Encoding"), r.name)
	}
	k, err := db.GetKillSwitch(t.Context(), b.pool)
	require.NoError(t, err)
	require.False(t, k.Engaged, "the kill switch stays released")
	require.Equal(t, "dispatched", b.do(t, http.MethodGet, "/admin/traces/k:held", "").json(t)["trace"].(map[string]any)["status"],
		"the trace is still held")
	var jobs, ledger int
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM river_job`).Scan(&jobs))
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT count(*) FROM spot_ledger`).Scan(&ledger))
	require.Zero(t, jobs, "no purge was queued")
	require.Zero(t, ledger, "the ledger is unchanged")

	res := send(http.MethodPut, "/admin/kill-switch", `{"engaged": true}`, "identity")
	require.Equal(t, http.StatusOK, res.Status, "identity is no coding: %s", res.Body)
}

// River's UI under /admin reads JSON bodies too (cancel, retry, delete):
// a body in a content coding is refused there as well, and the job it
// names is left as it was.
func TestAdminRiverUIBodyWithAContentEncodingIs415(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	res := b.do(t, http.MethodPost, "/admin/purge", "")
	require.Equal(t, http.StatusAccepted, res.Status, string(res.Body))
	id := fmt.Sprint(res.json(t)["job_id"])

	// River's API is not in hoox's OpenAPI document: no contract wrapper.
	req := httptest.NewRequest(http.MethodPost, "/admin/river/api/jobs/cancel", strings.NewReader(`{"ids":["`+id+`"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Bearer "+adminToken)
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	require.Equal(t, http.StatusUnsupportedMediaType, rec.Code, rec.Body.String())
	require.Equal(t, "identity", rec.Header().Get("Accept-Encoding"))

	var state string
	require.NoError(t, b.pool.QueryRow(t.Context(), `SELECT state FROM river_job WHERE id = $1`, id).Scan(&state))
	require.Equal(t, "available", state, "the purge job was not cancelled")
}

// The web page reads trace IDs and filters with the same rules as the
// admin API: a NUL or invalid UTF-8 is a 400, not a 500.
func TestUIRefusesTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	for _, path := range []string{"/ui/trace/k:%FF", "/ui/trace/k:a%00b", "/ui/?exchange=%00", "/ui/orders?symbol=%FF"} {
		res := br.get(path)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%s: %s", path, res.Body)
	}
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "ui-text").Status)
	for _, form := range []url.Values{
		{"trace_id": {"k:ui-text\x00"}, "confirm": {"yes"}},
		{"trace_id": {"k:ui-text\xff"}, "confirm": {"yes"}},
		{"trace_id": {"k:ui-text"}, "confirm": {"yes"}, "reason": {"a\x00b"}},
	} {
		res := br.post("/ui/release", form, nil)
		assert.Equal(t, http.StatusBadRequest, res.Status, "%v: %s", form, res.Body)
	}
	d, err := db.GetTrace(t.Context(), b.pool, "k:ui-text")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "no refused form released the trace")

	res := br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"bad \xff byte"}}, nil)
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	require.Contains(t, string(res.Body), "must be valid UTF-8")
	res = br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {strings.Repeat("é", 257)}}, nil)
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	ks, err := db.GetKillSwitch(t.Context(), b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged, "no refused form engaged the kill switch")
}
