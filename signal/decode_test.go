package signal

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	t.Parallel()

	deep := strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth)
	tooDeep := `{"x":` + strings.Repeat(`[`, MaxDepth) + strings.Repeat(`]`, MaxDepth) + `}`

	tests := []struct {
		name string
		body string
		// wantMsg is a fragment of the error message; "" means success.
		wantMsg string
		// wantLine and wantColumn, when non-zero, locate the error.
		wantLine, wantColumn int
	}{
		{name: "minimal object", body: `{}`},
		{name: "surrounding whitespace", body: " \n\t{\"symbol\":\"BTCUSDT\"}\r\n "},
		{name: "byte order mark is stripped", body: "\xEF\xBB\xBF{\"symbol\":\"BTCUSDT\"}"},
		{name: "unknown nested fields are ignored", body: `{"meta":{"a":[1,2,{"b":null}]},"symbol":"X"}`},
		{name: "nesting at the limit", body: deep},
		{name: "empty body", body: ``, wantMsg: "body is empty"},
		{name: "whitespace body", body: " \n ", wantMsg: "body is empty"},
		{name: "bom only", body: "\xEF\xBB\xBF", wantMsg: "body is empty"},
		{name: "top-level array", body: `[{"symbol":"X"}]`, wantMsg: "must be a JSON object", wantLine: 1, wantColumn: 1},
		{name: "top-level string", body: `"hello"`, wantMsg: "must be a JSON object"},
		{name: "top-level number", body: `42`, wantMsg: "must be a JSON object"},
		{name: "top-level null", body: `null`, wantMsg: "must be a JSON object"},
		{name: "trailing object", body: `{"a":1}{"a":2}`, wantMsg: "after the JSON object", wantLine: 1, wantColumn: 8},
		{name: "trailing garbage on next line", body: "{\"a\":1}\n x", wantMsg: "after the JSON object", wantLine: 2, wantColumn: 2},
		{name: "duplicate key", body: `{"quantity":1,"quantity":2}`, wantMsg: `duplicate key "quantity"`, wantLine: 1, wantColumn: 15},
		{name: "duplicate key via escape", body: `{"qty":1,"q\u0074y":1}`, wantMsg: `duplicate key "qty"`},
		{name: "duplicate key in nested unknown field", body: `{"meta":{"a":1,"a":2}}`, wantMsg: `duplicate key "a"`},
		{name: "nesting too deep", body: tooDeep, wantMsg: "nesting deeper than 32"},
		{name: "invalid utf-8", body: "{\"comment\":\"\xff\"}", wantMsg: "invalid UTF-8", wantLine: 1, wantColumn: 13},
		{name: "syntax error says where", body: "{\n  \"symbol\": \"X\",\n  \"qty\": ,\n}", wantMsg: "invalid character", wantLine: 3},
		{name: "truncated", body: `{"symbol":"X"`, wantMsg: "unexpected end"},
		{name: "missing colon", body: `{"symbol" "X"}`, wantMsg: "after object key"},
		{name: "trailing comma", body: `{"symbol":"X",}`, wantMsg: "invalid character"},
		{name: "single quotes", body: `{'symbol':'X'}`, wantMsg: "invalid character"},
		{name: "NaN literal", body: `{"quantity":NaN}`, wantMsg: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw, err := Decode([]byte(tt.body))
			if tt.wantMsg == "" {
				require.NoError(t, err)
				require.NotNil(t, raw)
				return
			}
			require.Error(t, err)
			require.Nil(t, raw)
			var se *Error
			require.True(t, errors.As(err, &se), "want *Error, got %T", err)
			require.Empty(t, se.Field, "syntax errors name no field")
			require.Contains(t, se.Error(), tt.wantMsg)
			require.Contains(t, se.Error(), "invalid JSON at line")
			if tt.wantLine != 0 {
				require.Equal(t, tt.wantLine, se.Line, "line")
			}
			if tt.wantColumn != 0 {
				require.Equal(t, tt.wantColumn, se.Column, "column")
			}
		})
	}
}

func TestDecodeOffsetCountsTheByteOrderMark(t *testing.T) {
	t.Parallel()

	_, err := Decode([]byte("\xEF\xBB\xBF{\"a\":1}x"))
	var se *Error
	require.ErrorAs(t, err, &se)
	// The sender's bytes: 3 of BOM, then "{"a":1}" (7), so x is at byte 10.
	require.Equal(t, 10, se.Offset)
	require.Equal(t, 8, se.Column, "the column is counted in the text an editor shows, without the BOM")
}

func TestRawNeverPrintsTheSecret(t *testing.T) {
	t.Parallel()

	raw, err := Decode([]byte(`{"secret":"hunter2-very-secret"}`))
	require.NoError(t, err)
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		require.NotContains(t, sprintf(format, raw), "hunter2")
	}
}

// Each key is listed under one field only, the canonical name first: a key
// read under two fields would be read twice. Decode keeps exactly the keys
// listed (knownKeys), so every key kept is read.
func TestFieldAliasesListEachKeyOnce(t *testing.T) {
	seen := map[string]string{}
	for field, keys := range fieldAliases {
		require.Equal(t, field, keys[0], "the canonical name comes first")
		for _, k := range keys {
			other, dup := seen[k]
			require.False(t, dup, "%q is a key of both %s and %s", k, field, other)
			seen[k] = field
		}
	}
	for _, k := range []string{"secret", "ticker", "contracts", "timenow", "idempotency_key", "market_position", "trailingStop", "accounts"} {
		require.True(t, isKnownField(k), "%q is kept by Decode", k)
	}
	require.False(t, isKnownField("unknown_key"), "a key no field reads is dropped")
}
