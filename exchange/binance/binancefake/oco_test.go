package binancefake_test

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// A spot OCO (rest-api.md, "New Order list - OCO") takes a SELL list only
// with the take-profit above the last price and the stop below it, only
// for the free base balance, and one open list per listClientOrderId;
// "Query Order list" finds it by listClientOrderId, -2013 when none.
func TestSpotOCOOrderListRules(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"ETH": decimal.RequireFromString("1.5")}}) // ETHUSDT at 3000
	call := func(method, path, params string) (int, map[string]any) {
		t.Helper()
		return signedJSON(t, s, method, path, params)
	}
	oco := func(list, qty, tp, sl string) (int, map[string]any) {
		return call(http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity="+qty+
			"&aboveType=LIMIT_MAKER&abovePrice="+tp+"&aboveClientOrderId="+list+"a&belowType=STOP_LOSS&belowStopPrice="+sl+
			"&belowClientOrderId="+list+"b&listClientOrderId="+list)
	}
	status, out := oco("l1", "1", "2900", "2800")
	require.Equal(t, http.StatusBadRequest, status, "a sell take-profit below the last price")
	require.EqualValues(t, -2010, out["code"], out)
	require.Equal(t, "The relationship of the prices for the orders is not correct.", out["msg"])
	status, out = oco("l1", "1", "3300", "3100")
	require.Equal(t, http.StatusBadRequest, status, "a sell stop above the last price")
	require.EqualValues(t, -2010, out["code"], out)
	status, out = oco("l1", "2", "3300", "2700")
	require.Equal(t, http.StatusBadRequest, status, "more than the free ETH")
	require.Equal(t, "Account has insufficient balance for requested action.", out["msg"])
	status, out = oco("l1", "1", "3300.001", "2700")
	require.Equal(t, http.StatusBadRequest, status, "off the tick")
	require.EqualValues(t, -1013, out["code"], out)
	status, out = call(http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1&aboveType=LIMIT_MAKER&abovePrice=3300&belowType=LIMIT_MAKER&belowPrice=2700")
	require.Equal(t, http.StatusBadRequest, status, "two limit orders")
	require.EqualValues(t, -1158, out["code"], out)
	require.Empty(t, s.OrderLists(), "nothing refused is held")

	status, out = oco("l1", "1", "3300", "2700")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "l1", out["listClientOrderId"])
	require.Equal(t, "EXECUTING", out["listOrderStatus"])
	status, out = oco("l1", "0.5", "3300", "2700")
	require.Equal(t, http.StatusBadRequest, status, "the same listClientOrderId while the first list is open")
	require.Equal(t, "Duplicate order sent.", out["msg"])
	status, out = oco("l2", "1", "3300", "2700")
	require.Equal(t, http.StatusBadRequest, status, "the first list holds 1 of the 1.5 ETH")
	require.Equal(t, "Account has insufficient balance for requested action.", out["msg"])

	status, out = call(http.MethodGet, "/api/v3/orderList", "origClientOrderId=l1")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "OCO", out["contingencyType"])
	require.Len(t, out["orders"], 2)
	status, out = call(http.MethodGet, "/api/v3/orderList", "origClientOrderId=nope")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -2013, out["code"])

	lists := s.OrderLists()
	require.Len(t, lists, 1)
	require.Equal(t, "3300", lists[0].Above.Price.String())
	require.Equal(t, "2700", lists[0].Below.StopPrice.String())
	s.ExpireList("l1")
	status, out = oco("l1", "1", "3300", "2700")
	require.Equal(t, http.StatusOK, status, "a listClientOrderId is free again once its list expired: %v", out)
}
