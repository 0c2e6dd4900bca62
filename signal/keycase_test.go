package signal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A field's key in another letter case ("Price", "Test", "Comment", a
// template typed by hand or exported by a tool that capitalises keys) is
// that field. It was dropped as unknown: "Test": true went live, "Price"
// became a market order, and two orders told apart only by "Comment" (the
// order's ID) were one signal, the second never placed.
func TestFieldKeysInAnyLetterCaseAreTheirFields(t *testing.T) {
	t.Parallel()
	s := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","Price":"100","Test":true,"Comment":"L1","Strategy":"ema","TIMESTAMP":"2024-05-01T12:00:00Z"}`)
	require.True(t, s.Test, "a test signal stays a test")
	require.Equal(t, OrderTypeLimit, s.OrderType, "a priced order stays a limit order")
	require.Equal(t, "100", s.Price.Decimal.String())
	require.Equal(t, "L1", s.Comment)
	require.Equal(t, "ema", s.Strategy)
	require.False(t, s.Timestamp.IsZero())

	lower := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","price":"100","test":true,"comment":"L1","strategy":"ema","timestamp":"2024-05-01T12:00:00Z"}`)
	require.Equal(t, string(lower.Canonical()), string(s.Canonical()), "one signal whatever the keys' case")

	other := mustSignal(t, `{"Exchange":"paper","Symbol":"BTCUSDT","Action":"buy","Quantity":"1","Price":"100","Test":true,"Comment":"L2","Strategy":"ema","TIMESTAMP":"2024-05-01T12:00:00Z"}`)
	require.NotEqual(t, s.Fingerprint(), other.Fingerprint(), "two order IDs are two signals")
	require.Equal(t, string(s.Canonical()), string(mustSignal(t, strings.Replace(string(other.Canonical()), `"L2"`, `"L1"`, 1)).Canonical()),
		"required fields in another case too")

	// The secret too, and aliases keep their rule: one value, or a 400.
	raw, err := Decode([]byte(`{"SECRET":"s3","exchange":"paper"}`))
	require.NoError(t, err)
	require.Equal(t, "s3", raw.Secret())
	e := signalError(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":"1","price":"100","Price":"101"}`)
	require.Equal(t, FieldPrice, e.Field)
	require.Contains(t, e.Msg, `"Price"`)
	mustSignal(t, `{"exchange":"paper","symbol":"X","action":"buy","quantity":"1","price":"100","Price":"100"}`)
}

// No two fields' keys are one key in another case: a key's field is never
// a guess.
func TestNoTwoFieldsShareAKeyInAnyCase(t *testing.T) {
	t.Parallel()
	seen := map[string]string{}
	for field, keys := range fieldAliases {
		for _, k := range keys {
			l := strings.ToLower(k)
			if f, ok := seen[l]; ok {
				require.Equal(t, f, field, "%q is a key of %s and %s", k, f, field)
			}
			seen[l] = field
		}
	}
}

// Only ASCII letters fold: Unicode folding would read the Kelvin sign
// (U+212A) in "tic\u212Aer" as the k of "ticker", a field no sender wrote.
func TestOnlyASCIILettersFoldInAKey(t *testing.T) {
	t.Parallel()
	e := signalError(t, "{\"exchange\":\"paper\",\"tic\u212Aer\":\"BTCUSDT\",\"action\":\"buy\",\"quantity\":\"1\"}")
	require.Equal(t, FieldSymbol, e.Field, "the symbol is missing: the Kelvin-sign key is no field")
	s := mustSignal(t, `{"exchange":"paper","TICKER":"BTCUSDT","action":"buy","quantity":"1"}`)
	require.Equal(t, "BTCUSDT", s.Symbol)
}
