package signal

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fastPathBodies are bodies both readers accept, chosen for what the fast
// path must read exactly as the token reader does: escapes, aliases,
// positions across lines, nested known and unknown values, every scalar.
var fastPathBodies = []string{
	hooxTemplate,
	`{}`,
	" \n\t{\"symbol\":\"BTCUSDT\"}\r\n ",
	`{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1}`,
	`{"exchange":"paper","symbol":"X","action":"sell","quantity":"1.50","price":"2e3","leverage":"10","timestamp":1714564800000,"test":"true"}`,
	`{"exchange":"paper","symbol":"X","action":"close","qty":1,"quantity":"1.0","trace_id":"k"}`,
	`{"exchange":"paper","symbol":"X","action":"buy","quantity":-1.5E+10,"test":true,"comment":null}`,
	`{"exchange":"paper","symbol":"BTC\u200fUSDT","action":"buy","quantity":1,"comment":"a\"b\\c\/d\n\ud83d\ude00 \ud800"}`,
	"{\n  \"exchange\" : \"paper\" ,\n\t\"symbol\":\"é🙂\",\n  \"action\":\"buy\",\"quantity\" :\"1\"\n}",
	`{"meta":{"a":[1,2,{"b":null}],"c":{"d":[]}},"symbol":"X","accounts":["a","b",["c"],{"d":1},null,2,true]}`,
	`{"accounts":[],"take_profit":{},"x":[],"y":{}}`,
	`{"exchange":"bybit","symbol":"X","action":"buy","quantity":1,"price":"100","take_profit":{"percent":"2.5"},"stopLoss":"1%","trailing_stop":{"distance":5}}`,
	`{"exchange":"bybit","symbol":"X","action":"short","quantity":1,"takeProfit":{"limitPrice":90,"percent":null},"stop_loss":{"type":"stop","stopPrice":"1e2"}}`,
	`{"q\u0074y":1,"secret":"s\u0065cret"}`,
	strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth),
	`{"accounts":` + strings.Repeat(`[`, MaxDepth-1) + strings.Repeat(`]`, MaxDepth-1) + `}`,
}

// TestDecodeFastAgreesWithTheTokenReader: on every body both accept, the
// fast path keeps exactly the fields, values and positions the token
// reader keeps.
func TestDecodeFastAgreesWithTheTokenReader(t *testing.T) {
	t.Parallel()
	for _, body := range fastPathBodies {
		fast, ok := decodeFast([]byte(body), 0)
		require.True(t, ok, "the fast path refused %s", body)
		slow, err := decodeTokens([]byte(body), 0)
		require.NoError(t, err, body)
		require.Equal(t, slow.fields, fast.fields, body)
	}
}

// TestDecodeFastLeavesErrorsToTheTokenReader: a body with an error is
// never accepted by the fast path, so Decode reports it where the token
// reader finds it.
func TestDecodeFastLeavesErrorsToTheTokenReader(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"quantity":1,"quantity":2}`,
		`{"qty":1,"q\u0074y":1}`,
		`{"meta":{"a":1,"a":2}}`,
		`{"accounts":[{"a":1,"a":2}]}`,
		`{"x":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`,
		`{"accounts":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`,
		strings.Repeat(`{"a":`, MaxDepth+1) + `1` + strings.Repeat(`}`, MaxDepth+1),
		`[1]`, `"x"`, `{"a":1} x`, `{"a":1}{"a":2}`, `{"a":}`, `{"a":1,}`, `{"a" 1}`, `{"a":NaN}`,
	} {
		_, ok := decodeFast([]byte(body), 0)
		require.False(t, ok, "the fast path accepted %s", body)
		_, err := Decode([]byte(body))
		require.Error(t, err, body)
	}
}
