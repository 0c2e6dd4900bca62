package okxfake_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// algoCall sends a signed request to path and returns the code that
// decides (an item's sCode under envelope code 1) and the data.
func algoCall(t *testing.T, f *okxfake.Server, method, path, body string) (string, []map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	ts := okx.Timestamp(f.Now())
	req.Header.Set("OK-ACCESS-KEY", f.APIKey())
	req.Header.Set("OK-ACCESS-PASSPHRASE", f.Passphrase())
	req.Header.Set("OK-ACCESS-TIMESTAMP", ts)
	req.Header.Set("OK-ACCESS-SIGN", okx.Sign(f.APISecret(), ts, method, path, body))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env struct {
		Code string           `json:"code"`
		Data []map[string]any `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	if env.Code == "1" && len(env.Data) > 0 {
		return env.Data[0]["sCode"].(string), env.Data
	}
	return env.Code, env.Data
}

// The fake takes a trailing stop (ordType move_order_stop) as OKX's algo
// order pages and error codes say: one of callbackRatio or callbackSpread
// (50015), the ratio inside the callback range (51257), algoClOrdId's form
// and its uniqueness among live algo orders (51065), a reduce-only order
// only against a position it reduces (51169); it finds one by algoClOrdId
// (51603 when none) and cancels it by algoId, refusing a second cancel
// (51400) and the cancel of one that triggered (51416).
func TestFakeTakesTrailingStopsByTheAlgoOrderRules(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(5))
	f.SetCallbackRange(okxfake.CallbackRange{Min: decimal.RequireFromString("0.001"), Max: decimal.RequireFromString("0.1")})
	trail := func(id, extra string) string {
		code, _ := algoCall(t, f, http.MethodPost, okxfake.PathAlgo,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"sell","ordType":"move_order_stop","sz":"5","reduceOnly":true,"algoClOrdId":"`+id+`"`+extra+`}`)
		return code
	}
	require.Equal(t, "50015", trail("hxa1", ``), "neither callbackRatio nor callbackSpread")
	require.Equal(t, "50015", trail("hxa1", `,"callbackRatio":"0.01","callbackSpread":"10"`), "both")
	require.Equal(t, "51257", trail("hxa1", `,"callbackRatio":"0.001"`), "at the range's exclusive minimum")
	require.Equal(t, "51257", trail("hxa1", `,"callbackRatio":"0.2"`), "above the maximum")
	require.Equal(t, "51000", trail("hx-bad", `,"callbackRatio":"0.01"`), "algoClOrdId outside alphanumerics")
	require.Equal(t, "0", trail("hxa1", `,"callbackRatio":"0.1"`), "the maximum itself")
	require.Equal(t, "51065", trail("hxa1", `,"callbackRatio":"0.01"`), "algoClOrdId held by a live algo order")
	code, _ := algoCall(t, f, http.MethodPost, okxfake.PathAlgo,
		`{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"buy","ordType":"move_order_stop","sz":"5","reduceOnly":true,"algoClOrdId":"hxa2","callbackSpread":"50"}`)
	require.Equal(t, "51169", code, "a reduce-only buy against a long")
	require.Len(t, f.AlgoOrders(), 1)

	code, data := algoCall(t, f, http.MethodGet, okxfake.PathAlgo+"?algoClOrdId=hxa1", "")
	require.Equal(t, "0", code)
	require.Equal(t, "0.1", data[0]["callbackRatio"])
	require.Equal(t, "live", data[0]["state"])
	code, _ = algoCall(t, f, http.MethodGet, okxfake.PathAlgo+"?algoClOrdId=hxnone", "")
	require.Equal(t, "51603", code)

	algoID := f.AlgoOrders()[0].AlgoID
	cancel := `[{"algoId":"` + algoID + `","instId":"BTC-USDT-SWAP"}]`
	code, _ = algoCall(t, f, http.MethodPost, okxfake.PathCancelAlgo, cancel)
	require.Equal(t, "0", code)
	require.Equal(t, "canceled", f.AlgoOrders()[0].State)
	code, _ = algoCall(t, f, http.MethodPost, okxfake.PathCancelAlgo, cancel)
	require.Equal(t, "51400", code, "a cancelled algo order cannot be cancelled again")
	require.Equal(t, "0", trail("hxa1", `,"callbackRatio":"0.01"`), "the ID is free once no live algo order holds it")

	require.NoError(t, f.TriggerAlgo("hxa1"))
	code, _ = algoCall(t, f, http.MethodPost, okxfake.PathCancelAlgo, `[{"algoId":"`+f.AlgoOrders()[1].AlgoID+`","instId":"BTC-USDT-SWAP"}]`)
	require.Equal(t, "51416", code, "a triggered algo order cannot be cancelled")
	require.Equal(t, "effective", f.AlgoOrders()[1].State)
}

// OKX leaves a trailing stop live when the position it protected closes
// (cxlOnClosePos is a TP/SL parameter, Post_Place_Algo_Order.md): the
// untriggered stops are listed (Get_Algo_Order_List.md, ordType required),
// and a triggered reduce-only stop trades against the position as it is
// then — the next long too — or fails (51169) when there is nothing for
// it to reduce.
func TestFakeKeepsTrailingStopsAfterACloseAndTriggersThemOnTheNextPosition(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(3))
	for _, id := range []string{"hxold", "hxflat"} {
		code, _ := algoCall(t, f, http.MethodPost, okxfake.PathAlgo, `{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"sell","ordType":"move_order_stop",
			"sz":"3","algoClOrdId":"`+id+`","reduceOnly":true,"callbackRatio":"0.01"}`)
		require.Equal(t, "0", code)
	}
	code, _ := algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?instId=BTC-USDT-SWAP", "")
	require.Equal(t, "50014", code, "ordType is required")
	f.SetPosition("BTC-USDT-SWAP", decimal.Zero) // closed
	code, data := algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?ordType=move_order_stop&instType=SWAP&instId=BTC-USDT-SWAP", "")
	require.Equal(t, "0", code)
	require.Len(t, data, 2, "both stops still live on the flat position")
	require.Equal(t, "hxflat", data[0]["algoClOrdId"], "newest first")
	require.Equal(t, "true", data[0]["reduceOnly"])

	require.NoError(t, f.TriggerAlgo("hxflat"))
	require.Equal(t, "order_failed", f.AlgoOrders()[1].State, "nothing to reduce")
	f.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(3)) // the next long
	require.NoError(t, f.TriggerAlgo("hxold"))
	require.Equal(t, "effective", f.AlgoOrders()[0].State)
	require.True(t, f.Position("BTC-USDT-SWAP").IsZero(), "the old stop sold the next long")
	_, data = algoCall(t, f, http.MethodGet, okxfake.PathAlgoPending+"?ordType=move_order_stop", "")
	require.Empty(t, data, "only untriggered stops are listed")
}
