package bybitfake_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// Bybit caps the Partial-mode take-profits and stop-losses on a linear
// symbol (error.mdx: "110061 Not allowed to have more than 20 TP/SLs under
// Partial tpSlMode"): an entry whose TP/SL would pass the cap is refused
// whole, before it is booked, so no position opens without them. Each
// take-profit and each stop-loss counts; Full mode and other symbols do
// not.
func TestFakeCapsPartialTPSLPerSymbol(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	f.SetBalance("USDT", mustDec("100000"))
	f.SetMaxPartialTPSL(3)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	n := 0
	create := func(symbol, mode, tp, sl string) (int, string) {
		t.Helper()
		n++
		body := map[string]any{"category": "linear", "symbol": symbol, "side": "Buy", "orderType": "Market", "qty": "0.01",
			"positionIdx": 0, "orderLinkId": "cap-" + strconv.Itoa(n), "tpslMode": mode}
		if tp != "" {
			body["takeProfit"] = tp
		}
		if sl != "" {
			body["stopLoss"] = sl
		}
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
	code, msg := create("BTCUSDT", "Partial", "61200", "58800")
	require.Equal(t, 0, code, msg)
	code, msg = create("BTCUSDT", "Partial", "61200", "58800")
	require.Equal(t, 110061, code, "two held and two more over a cap of three")
	require.Equal(t, "Not allowed to have more than 3 TP/SLs under Partial tpSlMode", msg)
	code, msg = create("BTCUSDT", "Partial", "", "58800")
	require.Equal(t, 0, code, "one more fits: %s", msg)
	code, _ = create("BTCUSDT", "Partial", "61200", "")
	require.Equal(t, 110061, code)
	code, msg = create("BTCUSDT", "Full", "61200", "")
	require.Equal(t, 0, code, "Full mode is not capped here: %s", msg)
	code, msg = create("ETHUSDT", "Partial", "3300", "2700")
	require.Equal(t, 0, code, "another symbol has its own count: %s", msg)
	held := 0
	for _, o := range f.Orders() {
		if o.Symbol == "BTCUSDT" && o.TpslMode == "Partial" {
			held++
		}
	}
	require.Equal(t, 2, held, "refused orders are not booked")
}
