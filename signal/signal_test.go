package signal

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hooxTemplate is the body a Hoox alert template sends, placeholders filled
// in the way TradingView fills them.
const hooxTemplate = `{
  "apiKey": "s3cret-webhook-key",
  "exchange": "Binance",
  "action": "CLOSE_SHORT",
  "symbol": "btcusdt",
  "quantity": 0.5,
  "orderType": "MARKET",
  "timenow": "2024-05-01T12:00:00Z",
  "idempotencyKey": "alert-42",
  "strategy": "EMA cross",
  "comment": "from TradingView"
}`

func TestSignalHooxTemplate(t *testing.T) {
	t.Parallel()

	raw, err := Decode([]byte(hooxTemplate))
	require.NoError(t, err)
	require.Equal(t, "s3cret-webhook-key", raw.Secret())

	s, err := raw.Signal()
	require.NoError(t, err)
	require.Equal(t, "binance", s.Exchange)
	require.Equal(t, "BTCUSDT", s.Symbol)
	require.Equal(t, "close_short", s.Action)
	require.Equal(t, "buy", s.Side, "closing a short buys")
	require.True(t, s.ReduceOnly)
	require.Equal(t, "0.5", s.Quantity.String())
	require.False(t, s.Price.Valid)
	require.Equal(t, OrderTypeMarket, s.OrderType)
	require.Equal(t, time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC), s.Timestamp)
	require.Equal(t, "alert-42", s.ClientKey)
	require.Equal(t, "EMA cross", s.Strategy)
	require.Equal(t, "from TradingView", s.Comment)
	require.False(t, s.Test)
	require.Zero(t, s.Leverage)
}

func TestSignalValid(t *testing.T) {
	t.Parallel()

	const base = `"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1`
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, s Signal)
	}{
		{"canonical names", `{"secret":"x","exchange":"paper","symbol":"ETH-PERP","action":"sell","quantity":"2","price":"3000.10","order_type":"limit","leverage":10,"timestamp":1714564800000,"trace_id":"abc","test":true,"strategy":"s","comment":"c"}`,
			func(t *testing.T, s Signal) {
				require.Equal(t, "ETH-PERP", s.Symbol)
				require.Equal(t, "sell", s.Side)
				require.Equal(t, "2", s.Quantity.String())
				require.True(t, s.Price.Valid)
				require.Equal(t, "3000.1", s.Price.Decimal.String())
				require.Equal(t, OrderTypeLimit, s.OrderType)
				require.Equal(t, 10, s.Leverage)
				require.Equal(t, int64(1714564800000), s.Timestamp.UnixMilli())
				require.Equal(t, "abc", s.ClientKey)
				require.True(t, s.Test)
			}},
		{"ticker alias", `{"exchange":"paper","ticker":"binance:btcusdt.p","action":"buy","quantity":1}`,
			func(t *testing.T, s Signal) { require.Equal(t, "BINANCE:BTCUSDT.P", s.Symbol) }},
		{"side alias", `{"exchange":"paper","symbol":"X","side":"Sell","quantity":1}`,
			func(t *testing.T, s Signal) { require.Equal(t, "sell", s.Action) }},
		{"qty alias", `{"exchange":"paper","symbol":"X","action":"buy","qty":"0.001"}`,
			func(t *testing.T, s Signal) { require.Equal(t, "0.001", s.Quantity.String()) }},
		{"contracts alias", `{"exchange":"paper","symbol":"X","action":"buy","contracts":0.5}`,
			func(t *testing.T, s Signal) { require.Equal(t, "0.5", s.Quantity.String()) }},
		{"time alias", `{` + base + `,"time":"2024-05-01T12:00:00.123+02:00"}`,
			func(t *testing.T, s Signal) {
				require.Equal(t, time.Date(2024, 5, 1, 10, 0, 0, 123e6, time.UTC), s.Timestamp)
			}},
		{"timestamp as numeric string", `{` + base + `,"timestamp":"1714564800000"}`,
			func(t *testing.T, s Signal) { require.Equal(t, int64(1714564800000), s.Timestamp.UnixMilli()) }},
		{"transaction_id alias", `{` + base + `,"transaction_id":"t1"}`,
			func(t *testing.T, s Signal) { require.Equal(t, "t1", s.ClientKey) }},
		{"idempotency_key alias", `{` + base + `,"idempotency_key":"t2"}`,
			func(t *testing.T, s Signal) { require.Equal(t, "t2", s.ClientKey) }},
		{"passphrase alias is a secret, not a field", `{` + base + `,"passphrase":"p"}`,
			func(t *testing.T, s Signal) { require.NotContains(t, string(s.Canonical()), `"p"`) }},
		{"aliases that agree", `{` + base + `,"qty":"1.000","ticker":"btcusdt","side":"BUY"}`,
			func(t *testing.T, s Signal) { require.Equal(t, "1", s.Quantity.String()) }},
		{"price makes a limit order", `{` + base + `,"price":100}`,
			func(t *testing.T, s Signal) { require.Equal(t, OrderTypeLimit, s.OrderType) }},
		{"market with a price stays market", `{` + base + `,"price":100,"order_type":"Market"}`,
			func(t *testing.T, s Signal) { require.Equal(t, OrderTypeMarket, s.OrderType) }},
		{"exponent within bounds", `{"exchange":"paper","symbol":"X","action":"buy","quantity":1.5e2}`,
			func(t *testing.T, s Signal) { require.Equal(t, "150", s.Quantity.String()) }},
		{"negative exponent", `{"exchange":"paper","symbol":"X","action":"buy","quantity":"15E-3"}`,
			func(t *testing.T, s Signal) { require.Equal(t, "0.015", s.Quantity.String()) }},
		{"precision kept exactly", `{"exchange":"paper","symbol":"X","action":"buy","quantity":12345678901234567890.123456789012345678}`,
			func(t *testing.T, s Signal) {
				require.Equal(t, "12345678901234567890.123456789012345678", s.Quantity.String())
			}},
		{"0.1 stays 0.1", `{"exchange":"paper","symbol":"X","action":"buy","quantity":0.1}`,
			func(t *testing.T, s Signal) { require.Equal(t, "0.1", s.Quantity.String()) }},
		{"test as string", `{` + base + `,"test":"true"}`,
			func(t *testing.T, s Signal) { require.True(t, s.Test) }},
		{"leverage as string", `{` + base + `,"leverage":"125"}`,
			func(t *testing.T, s Signal) { require.Equal(t, 125, s.Leverage) }},
		{"null optional fields are absent", `{` + base + `,"price":null,"leverage":null,"timestamp":null,"trace_id":null}`,
			func(t *testing.T, s Signal) {
				require.False(t, s.Price.Valid)
				require.Zero(t, s.Leverage)
				require.True(t, s.Timestamp.IsZero())
				require.Empty(t, s.ClientKey)
			}},
		{"unknown fields ignored", `{` + base + `,"extra":{"deep":[1,2,3]},"symbols":5}`,
			func(t *testing.T, s Signal) { require.Equal(t, "BTCUSDT", s.Symbol) }},
		{"close has no side", `{"exchange":"paper","symbol":"X","action":"close","quantity":1}`,
			func(t *testing.T, s Signal) {
				require.Empty(t, s.Side)
				require.True(t, s.ReduceOnly)
			}},
		{"close_long sells", `{"exchange":"paper","symbol":"X","action":"close_long","quantity":1}`,
			func(t *testing.T, s Signal) {
				require.Equal(t, "sell", s.Side)
				require.True(t, s.ReduceOnly)
			}},
		{"long buys", `{"exchange":"paper","symbol":"X","action":"Long","quantity":1}`,
			func(t *testing.T, s Signal) {
				require.Equal(t, "buy", s.Side)
				require.False(t, s.ReduceOnly)
			}},
		{"255 character key", `{` + base + `,"trace_id":"` + strings.Repeat("é", 255) + `"}`,
			func(t *testing.T, s Signal) { require.Len(t, []rune(s.ClientKey), 255) }},
		{"256 character comment", `{` + base + `,"comment":"` + strings.Repeat("ü", 256) + `"}`,
			func(t *testing.T, s Signal) { require.Len(t, []rune(s.Comment), 256) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.check(t, mustSignal(t, tt.body))
		})
	}
}

func TestSignalInvalid(t *testing.T) {
	t.Parallel()

	// with replaces or adds fields in a valid body, so each case breaks
	// exactly one rule.
	with := func(extra string) string {
		return `{"exchange":"paper","symbol":"BTCUSDT","action":"buy",` + extra + `}`
	}
	q := func(extra string) string { return with(`"quantity":1,` + extra) }

	tests := []struct {
		name      string
		body      string
		wantField string
		wantMsg   string
	}{
		{"missing exchange", `{"symbol":"X","action":"buy","quantity":1}`, FieldExchange, "is required"},
		{"missing symbol", `{"exchange":"paper","action":"buy","quantity":1}`, FieldSymbol, "is required"},
		{"missing action", `{"exchange":"paper","symbol":"X","quantity":1}`, FieldAction, "is required"},
		{"missing quantity", with(`"price":1`), FieldQuantity, "is required"},
		{"null required field", with(`"quantity":null`), FieldQuantity, "is required"},
		{"exchange with space", `{"exchange":"my venue","symbol":"X","action":"buy","quantity":1}`, FieldExchange, "must be 1–32"},
		{"exchange with kelvin sign", `{"exchange":"` + "\u212A" + `raken","symbol":"X","action":"buy","quantity":1}`, FieldExchange, "must be 1–32"},
		{"exchange too long", `{"exchange":"` + strings.Repeat("a", 33) + `","symbol":"X","action":"buy","quantity":1}`, FieldExchange, "must be 1–32"},
		{"symbol as number", `{"exchange":"paper","symbol":5,"action":"buy","quantity":1}`, FieldSymbol, "must be a string"},
		{"symbol empty", `{"exchange":"paper","symbol":"","action":"buy","quantity":1}`, FieldSymbol, "must be 1–32"},
		{"symbol with rtl mark", `{"exchange":"paper","symbol":"BTC\u200fUSDT","action":"buy","quantity":1}`, FieldSymbol, "must be 1–32"},
		{"symbol with space", `{"exchange":"paper","symbol":"BTC USDT","action":"buy","quantity":1}`, FieldSymbol, "must be 1–32"},
		{"symbol too long", `{"exchange":"paper","symbol":"` + strings.Repeat("A", 33) + `","action":"buy","quantity":1}`, FieldSymbol, "must be 1–32"},
		{"unknown action", `{"exchange":"paper","symbol":"X","action":"hodl","quantity":1}`, FieldAction, "must be one of"},
		{"action with look-alike", `{"exchange":"paper","symbol":"X","action":"clo\u017fe","quantity":1}`, FieldAction, "must be one of"},
		{"quantity true", with(`"quantity":true`), FieldQuantity, "must be a number or a numeric string"},
		{"quantity object", with(`"quantity":{"v":1}`), FieldQuantity, "must be a number or a numeric string"},
		{"quantity zero", with(`"quantity":0`), FieldQuantity, "must be greater than 0"},
		{"quantity zero with huge exponent", with(`"quantity":0e999999999`), FieldQuantity, "must be greater than 0"},
		{"quantity negative", with(`"quantity":-1`), FieldQuantity, "must be greater than 0"},
		{"quantity negative string", with(`"quantity":"-0.5"`), FieldQuantity, "must be greater than 0"},
		{"quantity NaN string", with(`"quantity":"NaN"`), FieldQuantity, "must be a decimal number"},
		{"quantity Infinity string", with(`"quantity":"Infinity"`), FieldQuantity, "must be a decimal number"},
		{"quantity empty string", with(`"quantity":""`), FieldQuantity, "must be a decimal number"},
		{"quantity with spaces", with(`"quantity":" 1"`), FieldQuantity, "must be a decimal number"},
		{"quantity hex", with(`"quantity":"0x10"`), FieldQuantity, "must be a decimal number"},
		{"quantity 1e400", with(`"quantity":1e400`), FieldQuantity, "at most 20 integer digits"},
		{"quantity huge exponent", with(`"quantity":1e999999999999999999`), FieldQuantity, "at most 20 integer digits"},
		{"quantity tiny exponent", with(`"quantity":"1e-999999999999999999"`), FieldQuantity, "at most 18 decimal places"},
		{"quantity 21 integer digits", with(`"quantity":123456789012345678901`), FieldQuantity, "at most 20 integer digits"},
		{"quantity 19 decimals", with(`"quantity":0.0000000000000000001`), FieldQuantity, "at most 18 decimal places"},
		{"quantity aliases disagree", with(`"quantity":1,"qty":2`), FieldQuantity, `given as both "quantity" and "qty" with different values`},
		{"price zero", q(`"price":0`), FieldPrice, "must be greater than 0"},
		{"price negative", q(`"price":"-5"`), FieldPrice, "must be greater than 0"},
		{"price Infinity", q(`"price":"-Infinity"`), FieldPrice, "must be a decimal number"},
		{"limit without price", q(`"order_type":"limit"`), FieldOrderType, "limit order requires a price"},
		{"unknown order type", q(`"orderType":"stop"`), FieldOrderType, "must be market or limit"},
		{"order type aliases disagree", q(`"price":1,"order_type":"limit","orderType":"market"`), FieldOrderType, "different values"},
		{"leverage fraction", q(`"leverage":2.5`), FieldLeverage, "integer from 1 to 125"},
		{"leverage zero", q(`"leverage":0`), FieldLeverage, "integer from 1 to 125"},
		{"leverage too high", q(`"leverage":126`), FieldLeverage, "integer from 1 to 125"},
		{"leverage bool", q(`"leverage":true`), FieldLeverage, "must be a number"},
		{"timestamp garbage", q(`"timestamp":"yesterday"`), FieldTimestamp, "RFC 3339"},
		{"timestamp in seconds", q(`"timestamp":1714564800`), FieldTimestamp, "Unix milliseconds after 2000"},
		{"timestamp fraction", q(`"timestamp":1714564800000.5`), FieldTimestamp, "RFC 3339"},
		{"timestamp aliases disagree", q(`"time":"2024-05-01T12:00:00Z","timenow":"2024-05-01T12:00:01Z"`), FieldTimestamp, `"time" and "timenow"`},
		{"key empty", q(`"trace_id":""`), FieldTraceID, "1–255 printable"},
		{"key 256 characters", q(`"trace_id":"` + strings.Repeat("k", 256) + `"`), FieldTraceID, "1–255 printable"},
		{"key 300 characters", q(`"idempotencyKey":"` + strings.Repeat("k", 300) + `"`), FieldTraceID, "1–255 printable"},
		{"key with newline", q(`"trace_id":"a\nb"`), FieldTraceID, "no control"},
		{"key with NUL", q(`"trace_id":"a\u0000b"`), FieldTraceID, "no control"},
		{"key with rtl mark", q(`"trace_id":"abc\u200f"`), FieldTraceID, "invisible"},
		{"key with zero width space", q(`"trace_id":"ab\u200bc"`), FieldTraceID, "invisible"},
		{"key as number", q(`"trace_id":42`), FieldTraceID, "must be a string"},
		{"key aliases disagree", q(`"trace_id":"a","transaction_id":"b"`), FieldTraceID, `"trace_id" and "transaction_id"`},
		{"test as number", q(`"test":1`), FieldTest, "true or false"},
		{"test as yes", q(`"test":"yes"`), FieldTest, "true or false"},
		{"strategy too long", q(`"strategy":"` + strings.Repeat("s", 257) + `"`), FieldStrategy, "at most 256"},
		{"strategy with escape sequence", q(`"strategy":"\u001b[31mred"`), FieldStrategy, "control characters"},
		{"comment with newline", q(`"comment":"line1\nline2"`), FieldComment, "control characters"},
		{"comment as array", q(`"comment":["a"]`), FieldComment, "must be a string"},
		{"secret as number", q(`"secret":12345`), FieldSecret, "must be a string"},
		{"secret aliases disagree", q(`"secret":"a","apiKey":"b"`), FieldSecret, `"secret" and "apiKey"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			se := signalError(t, tt.body)
			require.Equal(t, tt.wantField, se.Field)
			require.Contains(t, se.Msg, tt.wantMsg)
			require.Equal(t, tt.wantField+": "+se.Msg, se.Error())
			require.NotContains(t, se.Error(), "invalid JSON")
		})
	}
}

func TestSignalErrorLocatesTheValue(t *testing.T) {
	t.Parallel()

	se := signalError(t, "{\"exchange\":\"paper\",\"symbol\":\"X\",\"action\":\"buy\",\n  \"quantity\": -1}")
	require.Equal(t, FieldQuantity, se.Field)
	require.Equal(t, 2, se.Line)
	require.Equal(t, 15, se.Column)
}

func TestSecret(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		body string
		want string
	}{
		{"secret", `{"secret":"a"}`, "a"},
		{"apiKey", `{"apiKey":"b"}`, "b"},
		{"passphrase", `{"passphrase":"c"}`, "c"},
		{"aliases that agree", `{"secret":"d","apiKey":"d"}`, "d"},
		{"aliases that disagree authenticate nothing", `{"secret":"right","apiKey":"wrong"}`, ""},
		{"not a string", `{"secret":12345}`, ""},
		{"null", `{"secret":null}`, ""},
		{"absent", `{"symbol":"X"}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := Decode([]byte(tt.body))
			require.NoError(t, err)
			require.Equal(t, tt.want, raw.Secret())
		})
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()

	s := mustSignal(t, hooxTemplate)
	c := string(s.Canonical())
	require.Equal(t,
		`{"exchange":"binance","symbol":"BTCUSDT","action":"close_short","quantity":"0.5","price":null,"order_type":"market","leverage":null,"timestamp":1714564800000,"test":false,"strategy":"EMA cross","comment":"from TradingView"}`,
		c)
	require.NotContains(t, c, "s3cret-webhook-key", "the stored copy must never hold the secret")
	require.NotContains(t, c, "alert-42", "the client key names the signal, it is not part of it")

	// The canonical form is itself a signal body with the same meaning.
	again := mustSignal(t, c)
	require.Equal(t, c, string(again.Canonical()))
}

func TestCanonicalNeverContainsTheSecret(t *testing.T) {
	t.Parallel()

	for _, key := range []string{"secret", "apiKey", "passphrase"} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			s := mustSignal(t, `{"`+key+`":"TOPSECRET-9f8e7d","exchange":"paper","symbol":"X","action":"buy","quantity":1,"comment":"c"}`)
			require.NotContains(t, string(s.Canonical()), "TOPSECRET")
			require.NotContains(t, string(s.Canonical()), key)
		})
	}
}

func TestFingerprintIgnoresFormatting(t *testing.T) {
	t.Parallel()

	a := mustSignal(t, `{"exchange":"PAPER","symbol":"btcusdt","action":"BUY","quantity":1.50,"price":"100.0","timestamp":"2024-05-01T12:00:00Z"}`)
	b := mustSignal(t, `{"timenow":1714564800000,"qty":"1.5","price":1e2,"side":"buy","ticker":"BTCUSDT","exchange":"paper","order_type":"limit"}`)
	require.Equal(t, a.Canonical(), b.Canonical())
	require.Equal(t, a.Fingerprint(), b.Fingerprint())
	require.Regexp(t, `^[0-9a-f]{64}$`, a.Fingerprint())

	c := mustSignal(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":1.51,"price":100,"timestamp":1714564800000}`)
	require.NotEqual(t, a.Fingerprint(), c.Fingerprint())
}

// The exported rules are the ones a signal is held to, so admin input
// checked with them names what signals store: a name that decodes in a
// signal normalises to the signal's value, and one a signal refuses is
// refused.
func TestExportedRulesAreTheSignalsRules(t *testing.T) {
	t.Parallel()
	raw, err := Decode([]byte(`{"secret":"s","exchange":"PaPer_1","symbol":"btc/usdt","action":"buy","quantity":"1","strategy":"` +
		strings.Repeat("é", 256) + `"}`))
	require.NoError(t, err)
	s, err := raw.Signal()
	require.NoError(t, err)
	ex, msg := NormalizeExchange("PaPer_1")
	require.Empty(t, msg)
	require.Equal(t, s.Exchange, ex)
	sym, msg := NormalizeSymbol("btc/usdt")
	require.Empty(t, msg)
	require.Equal(t, s.Symbol, sym)
	require.Empty(t, CheckText(s.Strategy))

	for _, bad := range []string{"", "pa per", "kraken\u212a", strings.Repeat("p", 33)} {
		_, msg := NormalizeExchange(bad)
		require.NotEmpty(t, msg, "exchange %q", bad)
	}
	for _, bad := range []string{"", "BTC USDT", "BTC\x00"} {
		_, msg := NormalizeSymbol(bad)
		require.NotEmpty(t, msg, "symbol %q", bad)
	}
	for _, bad := range []string{"a\x00b", "bad \xff byte", "line\nbreak", "\x1b[2J", strings.Repeat("é", 257)} {
		require.NotEmpty(t, CheckText(bad), "text %q", bad)
	}
}
