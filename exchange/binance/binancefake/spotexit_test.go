package binancefake_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// signedJSON sends one signed request to s and decodes its answer, a
// JSON object (signedCall).
func signedJSON(t *testing.T, s *binancefake.Server, method, path, params string) (int, map[string]any) {
	t.Helper()
	var out map[string]any
	status := signedCall(t, s, method, path, params, &out)
	return status, out
}

// A lone spot exit is one order on POST /api/v3/order (rest-api.md, "New
// order"): STOP_LOSS takes stopPrice or trailingDelta and no price, a SELL
// stop must sit below the last price and a TAKE_PROFIT SELL above it (else
// -2010 "Order would trigger immediately."), LIMIT_MAKER must not trade at
// once, stopPrice obeys PRICE_FILTER, trailingDelta the TRAILING_DELTA
// filter and allowTrailingStop, the type must be in the symbol's
// orderTypes, and a resting SELL locks its coins: a second sell of the
// same coins is refused for want of balance.
func TestSpotExitOrderRules(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	eth := binancefake.DefaultSymbols()[1] // ETHUSDT at 3000, tick 0.01, step 0.01
	noStops := eth
	noStops.Symbol, noStops.OrderTypes = "ETHBUSD", []string{"LIMIT", "MARKET"}
	noTrailing := eth
	noTrailing.Symbol, noTrailing.AllowTrailingStop = "ETHFDUSD", false
	s := binancefake.New(t, binancefake.Options{Symbols: []binancefake.Symbol{eth, noStops, noTrailing},
		Balances: map[string]decimal.Decimal{"ETH": d("1")}})
	place := func(params string) (int, map[string]any) {
		t.Helper()
		if !strings.Contains(params, "quantity=") {
			params += "&quantity=1"
		}
		return signedJSON(t, s, http.MethodPost, "/api/v3/order", "side=SELL&newOrderRespType=RESULT&"+params)
	}
	refused := func(code float64, msg, why string, params string) {
		t.Helper()
		status, out := place(params)
		require.Equal(t, http.StatusBadRequest, status, why)
		require.EqualValues(t, code, out["code"], "%s: %v", why, out)
		if msg != "" {
			require.Equal(t, msg, out["msg"], why)
		}
	}
	refused(-1102, "", "a stop without stopPrice or trailingDelta", "symbol=ETHUSDT&type=STOP_LOSS")
	refused(-1106, "", "a STOP_LOSS takes no price", "symbol=ETHUSDT&type=STOP_LOSS&stopPrice=2900&price=2900")
	refused(-2010, "Order would trigger immediately.", "a sell stop above the last price", "symbol=ETHUSDT&type=STOP_LOSS&stopPrice=3100")
	refused(-2010, "Order would trigger immediately.", "a sell stop at the last price", "symbol=ETHUSDT&type=STOP_LOSS&stopPrice=3000")
	refused(-2010, "Order would trigger immediately.", "a sell take-profit below the last price", "symbol=ETHUSDT&type=TAKE_PROFIT&stopPrice=2900")
	refused(-2010, "Order would immediately match and take.", "a maker sell below the last price", "symbol=ETHUSDT&type=LIMIT_MAKER&price=2990")
	refused(-1013, "Filter failure: PRICE_FILTER", "a stop off the tick", "symbol=ETHUSDT&type=STOP_LOSS&stopPrice=2900.001")
	refused(-1013, "Filter failure: TRAILING_DELTA", "a trailing delta below the filter", "symbol=ETHUSDT&type=STOP_LOSS&trailingDelta=5")
	refused(-2010, "Stop loss orders are not supported for this symbol.", "STOP_LOSS not in orderTypes", "symbol=ETHBUSD&type=STOP_LOSS&stopPrice=2900")
	refused(-2010, "Trailing stop orders are not supported for this symbol.", "allowTrailingStop false",
		"symbol=ETHFDUSD&type=STOP_LOSS&trailingDelta=100")
	refused(-2010, "Account has insufficient balance for requested action.", "more ETH than held",
		"symbol=ETHUSDT&type=STOP_LOSS&stopPrice=2900&quantity=2")
	require.Empty(t, s.Orders(), "nothing refused is held")

	status, out := place("symbol=ETHUSDT&type=STOP_LOSS&stopPrice=2900&newClientOrderId=sl1")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "NEW", out["status"])
	require.Equal(t, "STOP_LOSS", out["type"])
	require.Equal(t, "2900.00000000", out["stopPrice"])
	_, acct := signedJSON(t, s, http.MethodGet, "/api/v3/account", "")
	require.Contains(t, acct["balances"], map[string]any{"asset": "ETH", "free": "0.00000000", "locked": "1.00000000"})
	refused(-2010, "Account has insufficient balance for requested action.", "the stop locks the ETH a take-profit would sell",
		"symbol=ETHUSDT&type=LIMIT_MAKER&price=3300&newClientOrderId=tp1")

	status, out = signedJSON(t, s, http.MethodGet, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=sl1")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "2900.00000000", out["stopPrice"], "the order query shows the trigger")
	status, out = signedJSON(t, s, http.MethodDelete, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=sl1")
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "CANCELED", out["status"])

	status, out = place("symbol=ETHUSDT&type=STOP_LOSS&trailingDelta=150&newClientOrderId=tr1")
	require.Equal(t, http.StatusOK, status, "a trailing stop needs no stopPrice: %v", out)
	require.EqualValues(t, 150, out["trailingDelta"])
	status, out = signedJSON(t, s, http.MethodDelete, "/api/v3/order", "symbol=ETHUSDT&origClientOrderId=tr1")
	require.Equal(t, http.StatusOK, status, out)

	status, out = place("symbol=ETHUSDT&type=LIMIT_MAKER&price=3300&newClientOrderId=tp1")
	require.Equal(t, http.StatusOK, status, "free again once the stops are cancelled: %v", out)
	require.Equal(t, "LIMIT_MAKER", out["type"])
	require.NoError(t, s.FillOrder("tp1"))
	require.True(t, s.Balance("ETH").IsZero(), "the take-profit sold the ETH")
}

// An OCO's stop order may trail (faqs/trailing-stop-faq.md: "OCO orders
// also support trailing stop orders in the contingent leg"; rest-api.md,
// "New Order list - OCO": "Either belowStopPrice or belowTrailingDelta or
// both, must be specified"): within TRAILING_DELTA, and without a
// stopPrice only the take-profit is held against the last price.
func TestSpotOCOStopOrderMayTrail(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"ETH": decimal.RequireFromString("1")}}) // ETHUSDT at 3000
	oco := func(tp, below string) (int, map[string]any) {
		return signedJSON(t, s, http.MethodPost, "/api/v3/orderList/oco", "symbol=ETHUSDT&side=SELL&quantity=1"+
			"&aboveType=LIMIT_MAKER&abovePrice="+tp+"&belowType=STOP_LOSS&"+below+"&listClientOrderId=l1")
	}
	status, out := oco("3300", "belowTrailingDelta=5000")
	require.Equal(t, http.StatusBadRequest, status, "outside TRAILING_DELTA")
	require.Equal(t, "Filter failure: TRAILING_DELTA", out["msg"])
	status, out = oco("2900", "belowTrailingDelta=150")
	require.Equal(t, http.StatusBadRequest, status, "the take-profit is still held against the last price")
	require.EqualValues(t, -2010, out["code"], out)
	require.Empty(t, s.OrderLists())

	status, out = oco("3300", "belowTrailingDelta=150")
	require.Equal(t, http.StatusOK, status, out)
	l := s.OrderLists()[0]
	require.EqualValues(t, 150, l.Below.TrailingDelta)
	require.True(t, l.Below.StopPrice.IsZero(), "trails from the next trade")
}
