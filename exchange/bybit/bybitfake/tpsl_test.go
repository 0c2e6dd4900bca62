package bybitfake_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// TestFakeEnforcesTPSLRules shows the create-order.mdx rules for a
// take-profit and stop-loss set on the order, as the adapter must meet
// them: on the right side of the base price (the limit price, or the last
// price for a market order: 60000 for BTCUSDT), on the tick (0.10 linear,
// 0.1 spot), never on a reduce-only order, and on spot only on a limit
// order.
func TestFakeEnforcesTPSLRules(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	f.SetBalance("USDT", mustDec("100000"))
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	n := 0
	create := func(body map[string]any) (int, string) {
		t.Helper()
		n++
		body["orderLinkId"] = "tpsl-" + string(rune('a'+n))
		b, err := json.Marshal(body)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, string(b), now, bybitfake.DefaultAPISecret))
		require.NoError(t, err)
		defer resp.Body.Close()
		var env struct {
			RetCode int    `json:"retCode"`
			RetMsg  string `json:"retMsg"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		return env.RetCode, env.RetMsg
	}
	linear := func(side, orderType string, extra map[string]any) map[string]any {
		m := map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": side, "orderType": orderType, "qty": "0.01", "positionIdx": 0}
		if orderType == "Limit" {
			m["price"] = "59000"
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}

	tests := []struct {
		name string
		body map[string]any
		code int
		msg  string
	}{
		{"buy market with tp above and sl below the last price", linear("Buy", "Market", map[string]any{"takeProfit": "61200", "stopLoss": "58800", "tpslMode": "Partial"}), 0, "OK"},
		{"buy market tp below the last price", linear("Buy", "Market", map[string]any{"takeProfit": "59999.9"}), 10001, "TakeProfit:59999.9 set for Buy position should be higher than base_price:60000"},
		{"buy market sl above the last price", linear("Buy", "Market", map[string]any{"stopLoss": "60000"}), 10001, "StopLoss:60000 set for Buy position should lower than base_price:60000"},
		{"sell market tp above the last price", linear("Sell", "Market", map[string]any{"takeProfit": "60100"}), 10001, "TakeProfit:60100 set for Sell position should be lower than base_price:60000"},
		{"sell market sl below the last price", linear("Sell", "Market", map[string]any{"stopLoss": "59000"}), 10001, "StopLoss:59000 set for Sell position should be higher than base_price:60000"},
		{"buy limit: the base price is the limit price", linear("Buy", "Limit", map[string]any{"takeProfit": "59500", "stopLoss": "58000"}), 0, "OK"},
		{"tp off the tick", linear("Buy", "Market", map[string]any{"takeProfit": "61000.05"}), 10001, "params error: takeProfit invalid"},
		{"full mode with a limit tp", linear("Buy", "Market", map[string]any{"takeProfit": "61000", "tpslMode": "Full", "tpOrderType": "Limit"}), 10001, "params error: tpslMode Full only supports Market tp/sl order types"},
		{"unknown trigger price type", linear("Buy", "Market", map[string]any{"takeProfit": "61000", "tpTriggerBy": "Last"}), 10001, "params error: triggerBy invalid"},
		{"spot market order", map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market", "qty": "0.01", "marketUnit": "baseCoin", "takeProfit": "61000"}, 170130, "TP/SL is only supported on spot limit orders"},
		{"spot limit order", map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit", "qty": "0.01", "price": "59000", "takeProfit": "61000", "stopLoss": "58000"}, 0, "OK"},
	}
	for _, tt := range tests {
		code, msg := create(tt.body)
		require.Equal(t, tt.code, code, tt.name)
		require.Equal(t, tt.msg, msg, tt.name)
	}

	f.SetPosition("BTCUSDT", "Buy", mustDec("0.1"))
	code, msg := create(linear("Sell", "Market", map[string]any{"reduceOnly": true, "stopLoss": "61000"}))
	require.Equal(t, 10001, code)
	require.Equal(t, "params error: reduce-only order cannot set TP/SL", msg)

	// An accepted order shows its TP/SL in the order lists, with Bybit's
	// defaults filled in.
	var held []bybitfake.Order
	for _, o := range f.Orders() {
		if !o.TakeProfit.IsZero() {
			held = append(held, o)
		}
	}
	require.Len(t, held, 3)
	require.Equal(t, "61200", held[0].TakeProfit.String())
	require.Equal(t, "58800", held[0].StopLoss.String())
	require.Equal(t, "Partial", held[0].TpslMode)
	require.Equal(t, "LastPrice", held[0].TpTriggerBy)
	require.Equal(t, "Full", held[1].TpslMode, "Bybit's default mode")
}

func mustDec(s string) decimal.Decimal { return decimal.RequireFromString(s) }
