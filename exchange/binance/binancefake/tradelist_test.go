package binancefake_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// The account trade lists refuse what their docs refuse: a limit over
// 1000 (both), a USDⓈ-M span over 7 days or fromId beside a time
// (Account-Trade-List.md), a spot span over 24 hours or orderId beside a
// time (rest-api.md "Account trade list", its supported combinations).
func TestTradeListsRefuseUndocumentedQueries(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	now := s.Now().UnixMilli()
	ms := func(d time.Duration) string { return strconv.FormatInt(now-d.Milliseconds(), 10) }
	var out any
	for _, c := range []struct {
		path, params string
		code         float64
	}{
		{"/fapi/v1/userTrades", "symbol=ETHUSDT&limit=1001", -1130},
		{"/api/v3/myTrades", "symbol=ETHUSDT&limit=1001", -1130},
		{"/fapi/v1/userTrades", "symbol=ETHUSDT&startTime=" + ms(8*24*time.Hour) + "&endTime=" + ms(0), -1127},
		{"/fapi/v1/userTrades", "symbol=ETHUSDT&fromId=1&startTime=" + ms(time.Hour), -1128},
		{"/api/v3/myTrades", "symbol=ETHUSDT&startTime=" + ms(25*time.Hour) + "&endTime=" + ms(0), -1127},
		{"/api/v3/myTrades", "symbol=ETHUSDT&orderId=1&startTime=" + ms(time.Hour), -1128},
	} {
		require.Equal(t, http.StatusBadRequest, signedCall(t, s, http.MethodGet, c.path, c.params, &out), c.params)
		require.Equal(t, c.code, out.(map[string]any)["code"], c.params)
	}
	for _, path := range []string{"/fapi/v1/userTrades", "/api/v3/myTrades"} {
		require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, path, "symbol=ETHUSDT&orderId=1&fromId=0&limit=1000", &out), out)
	}
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/userTrades",
		"symbol=ETHUSDT&orderId=1&startTime="+ms(7*24*time.Hour)+"&endTime="+ms(0), &out), out)
}
