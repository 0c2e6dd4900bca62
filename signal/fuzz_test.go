package signal

import (
	"bytes"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzDecode checks that no body makes the parser panic, that every error
// is an *Error, and that every accepted signal is deterministic: its
// canonical form is stable, decodes back to itself and hashes the same.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		hooxTemplate,
		`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1}`,
		`{"exchange":"paper","symbol":"X","action":"sell","quantity":"1.50","price":"2e3","leverage":"10","timestamp":1714564800000,"test":"true"}`,
		`{"exchange":"paper","symbol":"X","action":"close","qty":1,"quantity":"1.0","trace_id":"k"}`,
		`{"exchange":"paper","symbol":"X","action":"buy","quantity":1e400}`,
		`{"exchange":"paper","symbol":"X","action":"buy","quantity":1e-999999999999}`,
		`{"exchange":"paper","symbol":"X","action":"buy","quantity":"NaN"}`,
		`{"exchange":"paper","symbol":"BTC\u200fUSDT","action":"buy","quantity":1}`,
		"\xEF\xBB\xBF{\"a\":1}",
		`{"a":1,"a":2}`,
		`{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
		`{"a":1} x`,
		`[1]`,
		``,
		"{\"comment\":\"\xff\"}",
		`{"secret":"s","apiKey":"t"}`,
		`{"Exchange":"paper","SYMBOL":"X","Action":"buy","Qty":1,"Price":"2","price":"2","Test":"true","COMMENT":"L1","MARKET_POSITION":"short"}`,
		`{"exchange":"bybit","symbol":"X","action":"buy","quantity":1,"price":"100","take_profit":{"percent":"2.5"},"stopLoss":"1%","trailing_stop":{"distance":5}}`,
		`{"exchange":"bybit","symbol":"X","action":"short","quantity":1,"takeProfit":{"limitPrice":90,"percent":null},"stop_loss":{"type":"stop","stopPrice":"1e2"}}`,
		`{"exchange":"bybit","symbol":"X","action":"buy","quantity":1,"take_profit":{"percent":{"x":[1]}},"stop_loss":[{"price":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	now := time.UnixMilli(1714564805123)
	fingerprintRE := regexp.MustCompile(`^[0-9a-f]{64}$`)
	clientOrderIDRE := regexp.MustCompile(`^hx[a-z2-7]{30}$`)
	f.Fuzz(func(t *testing.T, body []byte) {
		// Decode hands both readers valid UTF-8 only.
		if fast, ok := decodeFast(body, 0); ok && utf8.Valid(body) {
			slow, err := decodeTokens(body, 0)
			if err != nil || !reflect.DeepEqual(fast.fields, slow.fields) {
				t.Fatalf("the fast path read %q as %+v, the token reader as %+v (%v)", body, fast.fields, slow, err)
			}
		}
		raw, err := Decode(body)
		if err != nil {
			requireSignalError(t, err)
			return
		}
		_ = raw.Secret()
		s, err := raw.Signal()
		if err != nil {
			requireSignalError(t, err)
			return
		}

		c := s.Canonical()
		if !bytes.Equal(c, s.Canonical()) {
			t.Fatalf("Canonical is not deterministic")
		}
		if !utf8.Valid(c) {
			t.Fatalf("Canonical is not UTF-8: %q", c)
		}
		fp := s.Fingerprint()
		if fp != s.Fingerprint() || !fingerprintRE.MatchString(fp) {
			t.Fatalf("bad fingerprint %q", fp)
		}
		if secret := raw.Secret(); len(secret) >= 8 && bytes.Contains(c, []byte(secret)) &&
			!strings.Contains(s.Strategy+s.Comment+s.Symbol+s.Exchange, secret) {
			t.Fatalf("Canonical leaks the secret: %s", c)
		}

		// The canonical form is a signal body with the same meaning.
		raw2, err := Decode(c)
		if err != nil {
			t.Fatalf("Canonical %s does not decode: %v", c, err)
		}
		s2, err := raw2.Signal()
		if err != nil {
			t.Fatalf("Canonical %s does not validate: %v", c, err)
		}
		if !bytes.Equal(c, s2.Canonical()) {
			t.Fatalf("Canonical does not round-trip:\n%s\n%s", c, s2.Canonical())
		}

		tr, err := DeriveTrace(s, "", now)
		if err != nil {
			t.Fatalf("DeriveTrace without a header: %v", err)
		}
		if tr.Fingerprint != fp {
			t.Fatalf("trace fingerprint %q, signal %q", tr.Fingerprint, fp)
		}
		if !clientOrderIDRE.MatchString(ClientOrderID("", tr.ID, 0)) {
			t.Fatalf("bad client order ID for %q", tr.ID)
		}
	})
}

// FuzzDeriveTrace checks the trace ID invariants for arbitrary signals and
// header keys, valid or not: no panic, the source is named by the prefix,
// test and live never share an ID, and a window lock leaves out the time.
func FuzzDeriveTrace(f *testing.F) {
	f.Add("paper", "BTCUSDT", "buy", "1.5", int64(1714564800000), "", "", false, int64(1714564805123), 0)
	f.Add("paper", "BTCUSDT", "sell", "2", int64(0), "body-key", "", true, int64(0), 1)
	f.Add("paper", "X", "close", "0.001", int64(0), "", "hdr", false, int64(-1), 7)
	f.Add("", "", "", "", int64(0), "", "abc\u200f", true, int64(1), -1)
	f.Add("paper", "X", "buy", "1", int64(0), "", "", false, int64(1714564805123), 0)
	clientOrderIDRE := regexp.MustCompile(`^hx[a-z2-7]{30}$`)
	f.Fuzz(func(t *testing.T, exchange, symbol, action, qty string, tsMillis int64, clientKey, header string, test bool, nowMillis int64, n int) {
		q, _ := parseDecimal(qty)
		s := Signal{
			Exchange: exchange, Symbol: symbol, Action: action, Quantity: q,
			ClientKey: clientKey, Test: test, OrderType: OrderTypeMarket,
		}
		if tsMillis != 0 {
			s.Timestamp = time.UnixMilli(tsMillis).UTC()
		}
		now := time.UnixMilli(nowMillis)

		tr, err := DeriveTrace(s, header, now)
		if err != nil {
			var se *Error
			// An invalid header, or one contradicting the body's key.
			if !errors.As(err, &se) || se.Field != HeaderIdempotencyKey || header == "" {
				t.Fatalf("unexpected error %v for header %q", err, header)
			}
			return
		}

		prefix := ""
		wantMode := ModeLive
		if test {
			prefix, wantMode = "test:", ModeTest
		}
		if tr.Mode != wantMode || tr.Fingerprint != s.Fingerprint() {
			t.Fatalf("mode %q fingerprint %q", tr.Mode, tr.Fingerprint)
		}
		if test != strings.HasPrefix(tr.ID, "test:") {
			t.Fatalf("test=%v but ID %q", test, tr.ID)
		}
		key := clientKey
		if header != "" {
			if clientKey != "" && clientKey != header {
				t.Fatalf("header %q contradicting body key %q was accepted: %+v", header, clientKey, tr)
			}
			key = header
		}
		switch tr.Source {
		case KeyClient:
			if tr.ID != prefix+"k:"+key || tr.LockKey != tr.ID {
				t.Fatalf("client trace %+v for key %q", tr, key)
			}
		case KeyDerived:
			if key != "" || tr.ID != prefix+"d:"+tr.Fingerprint || tr.LockKey != tr.ID {
				t.Fatalf("derived trace %+v", tr)
			}
		case KeyWindow:
			if key != "" || !s.Timestamp.IsZero() || tr.LockKey != prefix+"w:"+tr.Fingerprint ||
				!strings.HasPrefix(tr.ID, tr.LockKey+":") {
				t.Fatalf("window trace %+v", tr)
			}
		default:
			t.Fatalf("unknown source %q", tr.Source)
		}

		id := ClientOrderID("", tr.ID, n)
		if !clientOrderIDRE.MatchString(id) || id != ClientOrderID("", tr.ID, n) {
			t.Fatalf("bad client order ID %q", id)
		}
	})
}

// requireSignalError fails unless err is an *Error with a message.
func requireSignalError(t *testing.T, err error) {
	t.Helper()
	var se *Error
	if !errors.As(err, &se) || se.Msg == "" || se.Error() == "" {
		t.Fatalf("error %v (%T) is not a usable *Error", err, err)
	}
}
