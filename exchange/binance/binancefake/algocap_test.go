package binancefake_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// exchangeFilter returns symbol's filter of type typ as exchangeInfo
// serves it on the market under prefix; nil when absent.
func exchangeFilter(t *testing.T, s *binancefake.Server, prefix, symbol, typ string) map[string]any {
	t.Helper()
	resp, err := http.Get(s.URL + prefix + "/exchangeInfo")
	require.NoError(t, err)
	defer resp.Body.Close()
	var info struct {
		Symbols []struct {
			Symbol  string           `json:"symbol"`
			Filters []map[string]any `json:"filters"`
		} `json:"symbols"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&info))
	for _, sym := range info.Symbols {
		for _, f := range sym.Filters {
			if sym.Symbol == symbol && f["filterType"] == typ {
				return f
			}
		}
	}
	return nil
}

// USDⓈ-M caps the open algo orders per symbol with MAX_NUM_ALGO_ORDERS
// (common-definition.md: exchangeInfo {"filterType": "MAX_NUM_ALGO_ORDERS",
// "limit": n}; every STOP*/TAKE_PROFIT*/TRAILING_STOP_MARKET counts) and
// refuses one more with -4045 "Reach max stop order limit."
// (error-code.md); openAlgoOrders lists them (Current-All-Algo-Open-Orders.md).
// A cancelled one frees its place.
func TestFuturesAlgoOrdersAreCappedPerSymbol(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // BTCUSDT at 50000
	require.Nil(t, exchangeFilter(t, s, "/fapi/v1", "BTCUSDT", "MAX_NUM_ALGO_ORDERS"), "no cap set, none published")
	s.SetMaxNumAlgoOrders("BTCUSDT", 2)
	f := exchangeFilter(t, s, "/fapi/v1", "BTCUSDT", "MAX_NUM_ALGO_ORDERS")
	require.NotNil(t, f)
	require.EqualValues(t, 2, f["limit"])

	place := func(id, typ, target string) (int, map[string]any) {
		var out map[string]any
		status := signedCall(t, s, http.MethodPost, "/fapi/v1/algoOrder", "algoType=CONDITIONAL&symbol=BTCUSDT&side=SELL&type="+typ+
			"&quantity=0.01&"+target+"&reduceOnly=true&clientAlgoId="+id, &out)
		return status, out
	}
	status, out := place("a1", "STOP_MARKET", "triggerPrice=45000")
	require.Equal(t, http.StatusOK, status, out)
	status, out = place("a2", "TRAILING_STOP_MARKET", "callbackRate=1")
	require.Equal(t, http.StatusOK, status, out)
	status, out = place("a3", "TAKE_PROFIT_MARKET", "triggerPrice=55000")
	require.Equal(t, http.StatusBadRequest, status, "a third algo order over a cap of two")
	require.EqualValues(t, -4045, out["code"], out)
	require.Equal(t, "Reach max stop order limit.", out["msg"])
	status, out = place("e1", "TRAILING_STOP_MARKET", "callbackRate=1")
	require.Equal(t, http.StatusBadRequest, status, "a trailing stop counts too")
	require.EqualValues(t, -4045, out["code"], out)
	require.Len(t, s.AlgoOrders(), 2, "nothing refused is held")

	var open []map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/openAlgoOrders", "symbol=BTCUSDT", &open))
	require.Len(t, open, 2)
	require.Equal(t, "a1", open[0]["clientAlgoId"])
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/openAlgoOrders", "symbol=ETHUSDT", &open))
	require.Empty(t, open, "another symbol's count is its own")
	status, out = place("x1", "STOP_MARKET", "triggerPrice=45000")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -4045, out["code"], "still full")

	var cancelled map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodDelete, "/fapi/v1/algoOrder", "clientAlgoId=a1", &cancelled))
	status, out = place("a3", "TAKE_PROFIT_MARKET", "triggerPrice=55000")
	require.Equal(t, http.StatusOK, status, "a cancelled algo order no longer counts: %v", out)
	require.Equal(t, 2, s.OpenAlgoOrders(binancefake.MarketFutures, "BTCUSDT"))
}

// Spot's MAX_NUM_ALGO_ORDERS (filters.md: {"filterType":
// "MAX_NUM_ALGO_ORDERS", "maxNumAlgoOrders": n}) counts an OCO list's
// STOP_LOSS order, not its LIMIT_MAKER; one more is refused -1013 "Filter
// failure: MAX_NUM_ALGO_ORDERS" (errors.md). openOrders lists the lists'
// orders with their orderListId.
func TestSpotOCOStopOrdersAreCappedPerSymbol(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"ETH": decimal.NewFromInt(10)}}) // ETHUSDT at 3000
	s.SetMaxNumAlgoOrders("ETHUSDT", 2)
	f := exchangeFilter(t, s, "/api/v3", "ETHUSDT", "MAX_NUM_ALGO_ORDERS")
	require.NotNil(t, f)
	require.EqualValues(t, 2, f["maxNumAlgoOrders"])
	oco := func(list string) (int, map[string]any) {
		var out map[string]any
		status := signedCall(t, s, http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1"+
			"&aboveType=LIMIT_MAKER&abovePrice=3300&aboveClientOrderId="+list+"a&belowType=STOP_LOSS&belowStopPrice=2700"+
			"&belowClientOrderId="+list+"b&listClientOrderId="+list, &out)
		return status, out
	}
	for _, l := range []string{"l1", "l2"} {
		status, out := oco(l)
		require.Equal(t, http.StatusOK, status, out)
	}
	status, out := oco("l3")
	require.Equal(t, http.StatusBadRequest, status, "a third stop-loss over a cap of two (the two LIMIT_MAKERs do not count)")
	require.EqualValues(t, -1013, out["code"], out)
	require.Equal(t, "Filter failure: MAX_NUM_ALGO_ORDERS", out["msg"])
	require.Len(t, s.OrderLists(), 2)

	var open []map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/openOrders", "symbol=ETHUSDT", &open))
	require.Len(t, open, 4, "each list's two orders")
	types := map[string]int{}
	for _, o := range open {
		types[o["type"].(string)]++
		require.NotEqualValues(t, -1, o["orderListId"])
	}
	require.Equal(t, map[string]int{"STOP_LOSS": 2, "LIMIT_MAKER": 2}, types)

	var lone map[string]any
	status = signedCall(t, s, http.MethodPost, "/api/v3/order", "symbol=ETHUSDT&side=SELL&type=STOP_LOSS&quantity=1&stopPrice=2700&newClientOrderId=lone1", &lone)
	require.Equal(t, http.StatusBadRequest, status, "a lone STOP_LOSS counts too")
	require.Equal(t, "Filter failure: MAX_NUM_ALGO_ORDERS", lone["msg"], lone)
	status = signedCall(t, s, http.MethodPost, "/api/v3/order", "symbol=ETHUSDT&side=SELL&type=LIMIT_MAKER&quantity=1&price=3300&newClientOrderId=lone2", &lone)
	require.Equal(t, http.StatusOK, status, "a LIMIT_MAKER does not: %v", lone)

	s.ExpireList("l1")
	status, out = oco("l3")
	require.Equal(t, http.StatusOK, status, "an ended list frees its place: %v", out)
}

// Spot's MAX_NUM_ORDERS (filters.md: {"filterType": "MAX_NUM_ORDERS",
// "maxNumOrders": n}) counts every open order, an OCO list's two
// included; one more is refused -1013 "Filter failure: MAX_NUM_ORDERS".
func TestSpotOpenOrdersAreCappedPerSymbol(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"ETH": decimal.NewFromInt(10), "USDT": decimal.NewFromInt(100000)}})
	s.SetMaxNumOrders("ETHUSDT", 3)
	f := exchangeFilter(t, s, "/api/v3", "ETHUSDT", "MAX_NUM_ORDERS")
	require.NotNil(t, f)
	require.EqualValues(t, 3, f["maxNumOrders"])
	require.Nil(t, exchangeFilter(t, s, "/fapi/v1", "ETHUSDT", "MAX_NUM_ORDERS"), "the fake applies it to spot only")

	var out map[string]any
	status := signedCall(t, s, http.MethodPost, "/api/v3/order", "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=2900&newClientOrderId=rest1", &out)
	require.Equal(t, http.StatusOK, status, out)
	status = signedCall(t, s, http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1"+
		"&aboveType=LIMIT_MAKER&abovePrice=3300&belowType=STOP_LOSS&belowStopPrice=2700&listClientOrderId=l1", &out)
	require.Equal(t, http.StatusOK, status, "1 + 2 = 3: %v", out)
	status = signedCall(t, s, http.MethodPost, "/api/v3/order", "symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=2900&newClientOrderId=rest2", &out)
	require.Equal(t, http.StatusBadRequest, status, "a fourth open order")
	require.EqualValues(t, -1013, out["code"], out)
	require.Equal(t, "Filter failure: MAX_NUM_ORDERS", out["msg"])
	s.ExpireList("l1")
	status = signedCall(t, s, http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1"+
		"&aboveType=LIMIT_MAKER&abovePrice=3300&belowType=STOP_LOSS&belowStopPrice=2700&listClientOrderId=l2", &out)
	require.Equal(t, http.StatusOK, status, "the ended list freed two places: %v", out)
}
