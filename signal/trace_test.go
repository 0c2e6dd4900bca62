package signal

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDeriveTrace(t *testing.T) {
	t.Parallel()

	now := time.Date(2024, 5, 1, 12, 0, 5, 250e6, time.UTC)
	const (
		withTS    = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1,"timestamp":"2024-05-01T12:00:00Z"}`
		withKey   = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1,"trace_id":"body-key","timestamp":"2024-05-01T12:00:00Z"}`
		bare      = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1}`
		bareTest  = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1,"test":true}`
		withTSTst = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1,"timestamp":"2024-05-01T12:00:00Z","test":true}`
	)

	tests := []struct {
		name       string
		body       string
		header     string
		wantSource KeySource
		wantID     func(fp string) string
		wantLock   func(fp string) string
		wantMode   string
	}{
		{
			name: "header repeating the body key", body: withKey, header: "body-key", wantSource: KeyClient,
			wantID: func(string) string { return "k:body-key" }, wantLock: func(string) string { return "k:body-key" }, wantMode: ModeLive,
		},
		{
			name: "header key on a body without one", body: withTS, header: "hdr-key", wantSource: KeyClient,
			wantID: func(string) string { return "k:hdr-key" }, wantLock: func(string) string { return "k:hdr-key" }, wantMode: ModeLive,
		},
		{
			name: "body key beats timestamp", body: withKey, wantSource: KeyClient,
			wantID: func(string) string { return "k:body-key" }, wantLock: func(string) string { return "k:body-key" }, wantMode: ModeLive,
		},
		{
			name: "header key on a test signal", body: bareTest, header: "abc", wantSource: KeyClient,
			wantID: func(string) string { return "test:k:abc" }, wantLock: func(string) string { return "test:k:abc" }, wantMode: ModeTest,
		},
		{
			name: "timestamp derives", body: withTS, wantSource: KeyDerived,
			wantID: func(fp string) string { return "d:" + fp }, wantLock: func(fp string) string { return "d:" + fp }, wantMode: ModeLive,
		},
		{
			name: "test timestamp derives with prefix", body: withTSTst, wantSource: KeyDerived,
			wantID: func(fp string) string { return "test:d:" + fp }, wantLock: func(fp string) string { return "test:d:" + fp }, wantMode: ModeTest,
		},
		{
			name: "neither falls back to the window", body: bare, wantSource: KeyWindow,
			wantID:   func(fp string) string { return "w:" + fp + ":" + strconv.FormatInt(now.UnixMilli(), 10) },
			wantLock: func(fp string) string { return "w:" + fp }, wantMode: ModeLive,
		},
		{
			name: "test window", body: bareTest, wantSource: KeyWindow,
			wantID:   func(fp string) string { return "test:w:" + fp + ":1714564805250" },
			wantLock: func(fp string) string { return "test:w:" + fp }, wantMode: ModeTest,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, tt.body)
			tr, err := DeriveTrace(s, tt.header, now)
			require.NoError(t, err)
			require.Equal(t, tt.wantSource, tr.Source)
			require.Equal(t, s.Fingerprint(), tr.Fingerprint)
			require.Equal(t, tt.wantID(tr.Fingerprint), tr.ID)
			require.Equal(t, tt.wantLock(tr.Fingerprint), tr.LockKey)
			require.Equal(t, tt.wantMode, tr.Mode)
		})
	}
}

func TestDeriveTraceInvalidHeader(t *testing.T) {
	t.Parallel()

	s := mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1,"trace_id":"fine"}`)
	for name, header := range map[string]string{
		"too long":   strings.Repeat("h", 256),
		"300 chars":  strings.Repeat("h", 300),
		"control":    "a\tb",
		"rtl mark":   "abc\u200f",
		"bidi embed": "\u202eabc",
		"bad utf-8":  "ab\xffc",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := DeriveTrace(s, header, time.Now())
			var se *Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, HeaderIdempotencyKey, se.Field)
			require.True(t, strings.HasPrefix(se.Error(), "Idempotency-Key: "))
		})
	}
}

// A header key that names a different signal than the body's own key is
// refused rather than preferred: the body may be signed and the header is
// not, so letting the header win would let anyone who saw one request
// resend it under any number of new keys.
func TestDeriveTraceRefusesAHeaderKeyContradictingTheBody(t *testing.T) {
	t.Parallel()

	for _, body := range []string{
		`{"exchange":"paper","symbol":"X","action":"buy","quantity":1,"trace_id":"body-key"}`,
		`{"exchange":"paper","symbol":"X","action":"buy","quantity":1,"idempotencyKey":"body-key"}`,
	} {
		_, err := DeriveTrace(mustSignal(t, body), "other-key", time.Now())
		var se *Error
		require.ErrorAs(t, err, &se, body)
		require.Equal(t, HeaderIdempotencyKey, se.Field)
		require.Contains(t, se.Error(), "trace_id")
	}
}

func TestDerivedTraceIsStable(t *testing.T) {
	t.Parallel()

	now := time.Unix(1714564805, 0)
	trace := func(body string) Trace {
		tr, err := DeriveTrace(mustSignal(t, body), "", now)
		require.NoError(t, err)
		require.Equal(t, KeyDerived, tr.Source)
		return tr
	}

	a := trace(`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1.50","timestamp":1714564800000}`)
	b := trace(`{"timestamp":"2024-05-01T12:00:00Z","quantity":1.5,"action":"buy","symbol":"BTCUSDT","exchange":"paper"}`)
	require.Equal(t, a.ID, b.ID, "key order and number formatting must not split one signal in two")

	c := trace(`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":2,"timestamp":1714564800000}`)
	require.NotEqual(t, a.ID, c.ID, "a different quantity is a different order")

	d := trace(`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1.5,"timestamp":1714564800001}`)
	require.NotEqual(t, a.ID, d.ID, "two orders in the same second are not merged")

	// The derived ID does not depend on when the signal arrives.
	later, err := DeriveTrace(mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1.5,"timestamp":1714564800000}`), "", now.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, a.ID, later.ID)
}

func TestLiveAndTestNeverCollide(t *testing.T) {
	t.Parallel()

	now := time.Unix(1714564805, 0)
	for _, extra := range []string{``, `,"timestamp":1714564800000`, `,"trace_id":"same-key"`} {
		live, err := DeriveTrace(mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1`+extra+`}`), "", now)
		require.NoError(t, err)
		test, err := DeriveTrace(mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1,"test":true`+extra+`}`), "", now)
		require.NoError(t, err)
		require.Equal(t, live.Source, test.Source)
		require.NotEqual(t, live.ID, test.ID)
		require.NotEqual(t, live.LockKey, test.LockKey)
		require.Equal(t, ModeLive, live.Mode)
		require.Equal(t, ModeTest, test.Mode)
	}
}

func TestClientKeyCannotForgeADerivedID(t *testing.T) {
	t.Parallel()

	derived, err := DeriveTrace(mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1,"timestamp":1714564800000}`), "", time.Now())
	require.NoError(t, err)
	// A sender who uses the derived ID's text as its key still gets a
	// distinct trace.
	forged, err := DeriveTrace(mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1}`), derived.ID, time.Now())
	require.NoError(t, err)
	require.NotEqual(t, derived.ID, forged.ID)
	require.Equal(t, "k:"+derived.ID, forged.ID)
}

func TestWindowTrace(t *testing.T) {
	t.Parallel()

	s := mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":1}`)
	now := time.UnixMilli(1714564805123)
	first, err := DeriveTrace(s, "", now)
	require.NoError(t, err)
	repeat, err := DeriveTrace(s, "", now.Add(3*time.Second))
	require.NoError(t, err)

	require.Contains(t, first.ID, "1714564805123")
	require.NotContains(t, first.LockKey, "1714564805123")
	require.Equal(t, first.LockKey, repeat.LockKey, "repeats inside the window serialise on one lock")
	require.NotEqual(t, first.ID, repeat.ID)
	require.True(t, strings.HasPrefix(first.ID, first.LockKey+":"))
}

// The TradingView templates carry "comment": "{{strategy.order.id}}"
// because {{timenow}} is to the second: two orders filled on one bar
// (pyramided entries "L1" and "L2") render the same body but for the
// order's ID, and must be two traces, while a resend of one alert stays
// one. The comment is in the fingerprint for that; nothing else in the
// body tells them apart.
func TestOrderIDInCommentTellsTwoOrdersOfOneSecondApart(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 1, 12, 0, 5, 0, time.UTC)
	alert := func(id string) Trace {
		s := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","comment":"`+id+`","timestamp":"2024-05-01T12:00:05Z"}`)
		tr, err := DeriveTrace(s, "", now)
		require.NoError(t, err)
		return tr
	}
	require.NotEqual(t, alert("L1").ID, alert("L2").ID)
	require.Equal(t, alert("L1").ID, alert("L1").ID, "TradingView's retry of one alert")
	require.Contains(t, string(mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":"1","comment":"L1"}`).Canonical()), `"comment":"L1"`)
}
