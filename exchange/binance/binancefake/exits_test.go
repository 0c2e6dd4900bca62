package binancefake_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// signedCall sends one signed request to s and decodes its JSON answer.
func signedCall(t *testing.T, s *binancefake.Server, method, path, params string, out any) int {
	t.Helper()
	q := strings.TrimPrefix(params+"&recvWindow=5000&timestamp="+strconv.FormatInt(s.Now().UnixMilli(), 10), "&")
	q += "&signature=" + binance.Sign(s.APISecret(), q)
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL+path+"?"+q, nil)
	require.NoError(t, err)
	req.Header.Set("X-MBX-APIKEY", s.APIKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
	return resp.StatusCode
}

// A price move triggers a USDⓈ-M algo order as Event-Algo-Order-Update.md
// describes: it becomes a reduce-only market order in the matching engine,
// and the query (Query-Algo-Order.md) shows FINISHED with actualOrderId
// and actualPrice; the order query by that orderId shows the fill. A move
// short of a trigger leaves it NEW; a reduce-only exit with no position
// left is CANCELED ("Reduce Only reject") with no order.
func TestAlgoOrderTriggersWhenThePriceReachesIt(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	s.SetPosition("ETHUSDT", decimal.NewFromInt(1))
	var out map[string]any
	for _, p := range []string{"type=TAKE_PROFIT_MARKET&triggerPrice=3300&clientAlgoId=tp", "type=STOP_MARKET&triggerPrice=2700&clientAlgoId=sl"} {
		require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodPost, "/fapi/v1/algoOrder",
			"algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&quantity=1&reduceOnly=true&"+p, &out), out)
	}
	s.MovePrice("ETHUSDT", decimal.NewFromInt(3299))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp", &out))
	require.Equal(t, "NEW", out["algoStatus"], "short of the trigger")
	require.Equal(t, "", out["actualOrderId"])

	s.MovePrice("ETHUSDT", decimal.NewFromInt(3310))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp", &out))
	require.Equal(t, "FINISHED", out["algoStatus"], out)
	actual, _ := out["actualOrderId"].(string)
	require.NotEmpty(t, actual)
	require.Equal(t, "3310.00000", out["actualPrice"])
	require.True(t, s.Position("ETHUSDT").IsZero(), "the take-profit closed the position")
	var order map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/order", "symbol=ETHUSDT&orderId="+actual, &order), order)
	require.Equal(t, "FILLED", order["status"])
	require.Equal(t, "1", order["executedQty"])
	var trades []map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/userTrades", "symbol=ETHUSDT&orderId="+actual, &trades))
	require.Len(t, trades, 1, "the triggered order's trade, with its commission")

	s.MovePrice("ETHUSDT", decimal.NewFromInt(2600))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=sl", &out))
	require.Equal(t, "CANCELED", out["algoStatus"], "nothing left to reduce")
	require.Equal(t, "", out["actualOrderId"])
	require.True(t, s.Position("ETHUSDT").IsZero(), "the stop did not open a short")
}

// A price move executes one order of a spot OCO list: the other is
// EXPIRED and the list ALL_DONE (faqs/spot_glossary.md: "if one of the
// orders execute, the other is automatically expired"); the sale moves the
// balances and is in myTrades under the executed order's orderId.
func TestSpotOCOExecutesOneOrderAndExpiresTheOther(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"ETH": decimal.NewFromInt(1)}}) // ETHUSDT at 3000
	var out map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1"+
		"&aboveType=LIMIT_MAKER&abovePrice=3300&aboveClientOrderId=ltp&belowType=STOP_LOSS&belowStopPrice=2700"+
		"&belowClientOrderId=lsl&listClientOrderId=l", &out), out)
	s.MovePrice("ETHUSDT", decimal.NewFromInt(2800))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/orderList", "origClientOrderId=l", &out))
	require.Equal(t, "EXECUTING", out["listOrderStatus"], "between the two prices")

	s.MovePrice("ETHUSDT", decimal.NewFromInt(2650))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/orderList", "origClientOrderId=l", &out))
	require.Equal(t, "ALL_DONE", out["listOrderStatus"])
	var sl, tp map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=lsl", &sl))
	require.Equal(t, "FILLED", sl["status"], sl)
	require.Equal(t, "1.00000000", sl["executedQty"])
	require.Equal(t, "2650.00000000", sl["cummulativeQuoteQty"], "the stop sold at the market once triggered")
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=ltp", &tp))
	require.Equal(t, "EXPIRED", tp["status"])
	require.Equal(t, "0.00000000", tp["executedQty"])
	require.True(t, s.Balance("ETH").IsZero(), "the coins were sold")
	var trades []map[string]any
	orderID := strconv.FormatInt(int64(sl["orderId"].(float64)), 10)
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/myTrades", "symbol=ETHUSDT&orderId="+orderID, &trades))
	require.Len(t, trades, 1)
	require.Equal(t, "USDT", trades[0]["commissionAsset"])

	s.MovePrice("ETHUSDT", decimal.NewFromInt(3400))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=ltp", &tp))
	require.Equal(t, "EXPIRED", tp["status"], "an ended list executes nothing more")
	require.True(t, s.Balance("ETH").IsZero())
}

// Query-Algo-Order.md: an algo order CANCELED or EXPIRED with no filled
// trade is not found once 3 days passed since it was created; any algo
// order once 90 days passed.
func TestAlgoOrderQueryForgetsOldOrders(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	s.SetPosition("ETHUSDT", decimal.NewFromInt(1))
	var out map[string]any
	for _, p := range []string{"type=TAKE_PROFIT_MARKET&triggerPrice=3300&clientAlgoId=tp", "type=STOP_MARKET&triggerPrice=2700&clientAlgoId=sl"} {
		require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodPost, "/fapi/v1/algoOrder",
			"algoType=CONDITIONAL&symbol=ETHUSDT&side=SELL&quantity=1&reduceOnly=true&"+p, &out), out)
	}
	require.NoError(t, s.CancelAlgoOrder("sl"))
	s.Advance(71 * time.Hour)
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=sl", &out))
	require.Equal(t, "CANCELED", out["algoStatus"])
	s.Advance(2 * time.Hour)
	require.Equal(t, http.StatusBadRequest, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=sl", &out))
	require.EqualValues(t, -2013, out["code"], "cancelled with nothing filled, created over 3 days ago")
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp", &out))
	require.Equal(t, "NEW", out["algoStatus"], "a resting one is still found")
	s.Advance(90 * 24 * time.Hour)
	require.Equal(t, http.StatusBadRequest, signedCall(t, s, http.MethodGet, "/fapi/v1/algoOrder", "clientAlgoId=tp", &out))
	require.EqualValues(t, -2013, out["code"], "created over 90 days ago")
}
