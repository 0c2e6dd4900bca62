package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostile is one malformed or hostile request and the answer it must get.
type hostile struct {
	name        string
	body        string
	contentType string // default application/json
	headers     []string
	status      int
	code        string
}

func hostileRequests() []hostile {
	s := testSecret
	valid := func(extra string) string { return sig(extra) }
	with := func(field, raw string) string {
		// Replace or add one member of an otherwise valid signal.
		base := map[string]string{"secret": fmt.Sprintf("%q", s), "exchange": `"paper"`, "symbol": `"BTCUSDT"`, "action": `"buy"`, "quantity": `"1"`}
		base[field] = raw
		var parts []string
		for _, k := range []string{"secret", "exchange", "symbol", "action", "quantity"} {
			parts = append(parts, fmt.Sprintf("%q:%s", k, base[k]))
		}
		if _, ok := map[string]bool{"secret": true, "exchange": true, "symbol": true, "action": true, "quantity": true}[field]; !ok {
			parts = append(parts, fmt.Sprintf("%q:%s", field, raw))
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	bad := func(name, body string) hostile {
		return hostile{name: name, body: body, status: http.StatusBadRequest, code: "invalid_signal"}
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	sqlFrag := `'; DROP TABLE trace_ids; --`
	cases := []hostile{
		bad("empty body", ""),
		bad("whitespace body", "   \n\t "),
		bad("truncated object", `{"secret":"`+s+`","exchange":"paper"`),
		bad("truncated string", `{"secret":"`+s),
		bad("trailing garbage", valid("")+"x"),
		bad("two objects", valid("")+valid("")),
		bad("array at top", "["+valid("")+"]"),
		bad("string at top", `"hello"`),
		bad("number at top", `42`),
		bad("null at top", `null`),
		bad("single quotes", strings.ReplaceAll(valid(""), `"`, `'`)),
		bad("unquoted keys", `{secret:"x"}`),
		bad("trailing comma", strings.TrimSuffix(valid(""), "}")+",}"),
		bad("comment", "// hi\n"+valid("")),
		bad("invalid utf-8", "{\"secret\":\""+s+"\",\"symbol\":\"\xff\xfe\"}"),
		bad("deeply nested arrays", strings.TrimSuffix(valid(""), "}")+`,"junk":`+deep+"}"),
		bad("duplicate key", strings.TrimSuffix(valid(""), "}")+`,"quantity":"2"}`),
		bad("conflicting aliases", strings.TrimSuffix(valid(""), "}")+`,"qty":"2"}`),
		bad("missing exchange", `{"secret":"`+s+`","symbol":"BTCUSDT","action":"buy","quantity":"1"}`),
		bad("missing symbol", `{"secret":"`+s+`","exchange":"paper","action":"buy","quantity":"1"}`),
		bad("missing action", `{"secret":"`+s+`","exchange":"paper","symbol":"BTCUSDT","quantity":"1"}`),
		bad("missing quantity", `{"secret":"`+s+`","exchange":"paper","symbol":"BTCUSDT","action":"buy"}`),
		bad("unknown exchange", with("exchange", `"binance-nowhere"`)),
		bad("exchange as number", with("exchange", `5`)),
		bad("symbol as number", with("symbol", `5`)),
		bad("symbol as object", with("symbol", `{"a":1}`)),
		bad("empty symbol", with("symbol", `""`)),
		bad("long symbol", with("symbol", `"`+strings.Repeat("A", 33)+`"`)),
		bad("control char in symbol", with("symbol", `"BTC\u0000USDT"`)),
		bad("newline in symbol", with("symbol", `"BTC\nUSDT"`)),
		bad("rtl mark in symbol", with("symbol", "\"BTC\u200fUSDT\"")),
		bad("sql in symbol", with("symbol", fmt.Sprintf("%q", sqlFrag))),
		bad("unknown action", with("action", `"yolo"`)),
		bad("sql in action", with("action", fmt.Sprintf("%q", sqlFrag))),
		bad("action as bool", with("action", `true`)),
		bad("zero quantity", with("quantity", `0`)),
		bad("negative quantity", with("quantity", `-1`)),
		bad("negative quantity string", with("quantity", `"-0.5"`)),
		bad("huge quantity", with("quantity", `123456789012345678901234567890`)),
		bad("1e400 quantity", with("quantity", `1e400`)),
		bad("too many decimals", with("quantity", `0.1234567890123456789`)),
		bad("NaN quantity", with("quantity", `"NaN"`)),
		bad("Infinity quantity", with("quantity", `"Infinity"`)),
		bad("-Infinity quantity", with("quantity", `"-Infinity"`)),
		bad("hex quantity", with("quantity", `"0x10"`)),
		bad("quantity as bool", with("quantity", `true`)),
		bad("quantity as array", with("quantity", `[1]`)),
		bad("sql in quantity", with("quantity", fmt.Sprintf("%q", sqlFrag))),
		bad("zero price", with("price", `0`)),
		bad("negative price", with("price", `-100`)),
		bad("NaN price", with("price", `"NaN"`)),
		bad("limit without price", with("order_type", `"limit"`)),
		bad("unknown order type", with("order_type", `"stop"`)),
		bad("leverage zero", with("leverage", `0`)),
		bad("leverage too high", with("leverage", `126`)),
		bad("fractional leverage", with("leverage", `2.5`)),
		bad("bad timestamp", with("timestamp", `"yesterday"`)),
		bad("sql in timestamp", with("timestamp", fmt.Sprintf("%q", sqlFrag))),
		bad("300-char key", with("trace_id", `"`+strings.Repeat("k", 300)+`"`)),
		bad("empty key", with("trace_id", `""`)),
		bad("control char in key", with("trace_id", `"a\u0001b"`)),
		bad("key as object", with("trace_id", `{"x":1}`)),
		bad("test as string word", with("test", `"maybe"`)),
		bad("long strategy", with("strategy", `"`+strings.Repeat("s", 300)+`"`)),
		bad("control char in comment", with("comment", `"a\u0007b"`)),
		{name: "300-char Idempotency-Key header", body: valid(""), headers: []string{"Idempotency-Key", strings.Repeat("h", 300)}, status: 400, code: "invalid_signal"},
		{name: "no secret", body: `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1"}`, status: 401, code: "unauthorized"},
		{name: "wrong secret", body: strings.Replace(valid(""), s, "nope", 1), status: 401, code: "unauthorized"},
		{name: "secret as number", body: strings.Replace(valid(""), `"`+s+`"`, "12345", 1), status: 401, code: "unauthorized"},
		{name: "sql in secret", body: strings.Replace(valid(""), s, sqlFrag, 1), status: 401, code: "unauthorized"},
		{name: "bad signature", body: `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1"}`, headers: []string{"X-Hoox-Signature", "deadbeef"}, status: 401, code: "unauthorized"},
		{name: "form-encoded body", body: "secret=" + s + "&exchange=paper", contentType: "application/x-www-form-urlencoded", status: 415, code: "unsupported_media_type"},
		{name: "xml body", body: "<signal/>", contentType: "application/xml", status: 415, code: "unsupported_media_type"},
		{name: "no content type", body: valid(""), contentType: "-", status: 415, code: "unsupported_media_type"},
		{name: "10 MB body", body: `{"pad":"` + strings.Repeat("x", 10<<20) + `"}`, status: 413, code: "payload_too_large"},
	}
	// A UTF-8 BOM is tolerated (some tools add one): it must execute,
	// so it is not among the refusals; see TestBOMIsAccepted.
	return cases
}

func TestHostileRequestsAreRefusedAndChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := hostileRequests()
	require.GreaterOrEqual(t, len(cases), 60)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, b.url+"/webhook", strings.NewReader(tc.body))
			require.NoError(t, err)
			switch tc.contentType {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tc.contentType)
			}
			for i := 0; i+1 < len(tc.headers); i += 2 {
				req.Header.Set(tc.headers[i], tc.headers[i+1])
			}
			resp, err := client.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			var body map[string]any
			_ = decodeJSON(resp.Body, &body)
			require.Equal(t, tc.status, resp.StatusCode, "%v", body)
			require.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
			require.Equal(t, tc.code, body["code"], "%v", body)
			require.NotEmpty(t, body["detail"])
		})
	}
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 0, fills(t, b.pool))
	ok := post(t, b.url, sig(`"trace_id":"after-the-storm"`))
	require.Equal(t, http.StatusOK, ok.Status, "the server keeps serving: %s", ok.Raw)
}

func TestBOMIsAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := post(t, b.url, "\ufeff"+sig(`"trace_id":"bom-1"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
}

func TestTextPlainIsAccepted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	req, err := http.NewRequest(http.MethodPost, b.url+"/webhook", strings.NewReader(sig(`"trace_id":"tv-text"`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}
