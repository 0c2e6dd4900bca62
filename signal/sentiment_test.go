package signal

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The strategy's position after an order (sentiment, market_position) is
// part of what the strategy asked: a sell that leaves it long (a partial
// exit) and one that leaves it short (a short entry), fired with the same
// order ID and size in the same second or dedup window, are two orders.
// Both kept the action "sell" in the canonical form (askedAction, for
// rolling deploys), so they had one fingerprint and one trace: the second
// was answered as a duplicate and never placed.
func TestOrdersLeavingTheStrategyInOtherPositionsAreTwoSignals(t *testing.T) {
	t.Parallel()
	now := time.Now()
	cases := []struct{ name, a, b string }{
		{"sell by percent leaving long or short", `"action":"sell","market_position":"long","quantity":"25%"`,
			`"action":"sell","market_position":"short","quantity":"25%"`},
		{"sell by contracts leaving long or short", `"action":"sell","market_position":"long","quantity":"1"`,
			`"action":"sell","market_position":"short","quantity":"1"`},
		{"buy leaving long or short", `"action":"buy","sentiment":"bullish","quantity":"25%"`,
			`"action":"buy","sentiment":"bearish","quantity":"25%"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, keyed := range []string{`"timestamp":"2024-05-01T12:00:00Z"`, `"strategy":""`} {
				const common = `"exchange":"paper","symbol":"BTCUSDT","comment":"Exit"`
				a := mustSignal(t, `{`+common+`,`+keyed+`,`+c.a+`}`)
				b := mustSignal(t, `{`+common+`,`+keyed+`,`+c.b+`}`)
				require.NotEqual(t, a.Fingerprint(), b.Fingerprint(), "%s\n%s", a.Canonical(), b.Canonical())
				ta, err := DeriveTrace(a, "", now)
				require.NoError(t, err)
				tb, err := DeriveTrace(b, "", now)
				require.NoError(t, err)
				require.NotEqual(t, ta.LockKey, tb.LockKey, "two orders, one trace: the second is never placed")
			}
		})
	}
}

// A signal without sentiment keeps the canonical form (and fingerprint)
// of earlier releases, so its resend during a rolling deploy finds the
// same trace on either release; a cancel, which does not read sentiment,
// is the same cancel with or without it.
func TestSentimentIsInTheFingerprintOnlyWhenSent(t *testing.T) {
	t.Parallel()
	plain := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","quantity":"1","comment":"Exit","timestamp":1714564800000}`)
	require.Equal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","quantity":"1","price":null,"order_type":"market","leverage":null,"timestamp":1714564800000,"test":false,"strategy":"","comment":"Exit"}`,
		string(plain.Canonical()))

	short := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","market_position":"Short","quantity":"1","comment":"Exit","timestamp":1714564800000}`)
	c := string(short.Canonical())
	require.Contains(t, c, `"action":"sell","sentiment":"short"`)
	require.Equal(t, c, string(mustSignal(t, c).Canonical()), "the canonical form is itself the same signal")
	require.Equal(t, "short", mustSignal(t, c).Action)

	cancel := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"c"}`)
	flatCancel := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","market_position":"flat","trace_id":"c"}`)
	require.Equal(t, string(cancel.Canonical()), string(flatCancel.Canonical()))
}
