package binancefake_test

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// A resting GTC LIMIT order stays on the book until the market reaches
// its price (enums.md, "Time in force": GTC "An order will be on the book
// unless the order is canceled."), then fills at its limit price: a BUY
// once the last price falls to it, a SELL once it rises to it. A move
// short of it leaves it NEW. USDⓈ-M and spot alike.
func TestMovePriceFillsARestingLimitOrderAtItsPrice(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	s.SetBalance("ETH", decimal.NewFromInt(1))
	var out map[string]any
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodPost, "/fapi/v1/order",
		"symbol=ETHUSDT&side=BUY&type=LIMIT&timeInForce=GTC&quantity=1&price=2900&newClientOrderId=fbuy", &out), out)
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodPost, "/api/v3/order",
		"symbol=ETHUSDT&side=SELL&type=LIMIT&timeInForce=GTC&quantity=0.01&price=3100&newClientOrderId=ssell", &out), out)

	s.MovePrice("ETHUSDT", decimal.NewFromInt(2950))
	s.MovePrice("ETHUSDT", decimal.NewFromInt(3050))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/order", "symbol=ETHUSDT&origClientOrderId=fbuy", &out))
	require.Equal(t, "NEW", out["status"], "short of its price")
	require.True(t, s.Position("ETHUSDT").IsZero())
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=ssell", &out))
	require.Equal(t, "NEW", out["status"], "short of its price")

	s.MovePrice("ETHUSDT", decimal.NewFromInt(2850))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/fapi/v1/order", "symbol=ETHUSDT&origClientOrderId=fbuy", &out))
	require.Equal(t, "FILLED", out["status"], out)
	require.Equal(t, "1", out["executedQty"])
	require.True(t, decimal.RequireFromString(out["avgPrice"].(string)).Equal(decimal.NewFromInt(2900)), "at its limit price: %v", out["avgPrice"])
	require.True(t, s.Position("ETHUSDT").Equal(decimal.NewFromInt(1)))

	s.MovePrice("ETHUSDT", decimal.NewFromInt(3200))
	require.Equal(t, http.StatusOK, signedCall(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=ssell", &out))
	require.Equal(t, "FILLED", out["status"], out)
	require.True(t, decimal.RequireFromString(out["cummulativeQuoteQty"].(string)).Equal(decimal.NewFromInt(31)), "0.01 at 3100: %v", out["cummulativeQuoteQty"])
	var orders []binancefake.Order
	for _, o := range s.Orders() {
		if o.ClientOrderID == "ssell" || o.ClientOrderID == "fbuy" {
			orders = append(orders, o)
		}
	}
	require.Len(t, orders, 2, "filled in place, no second order")
}
