package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

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
