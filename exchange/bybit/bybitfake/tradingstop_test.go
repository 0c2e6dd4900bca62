package bybitfake_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// TestFakeHoldsAPositionsTrailingStop shows trading-stop.mdx's trailing
// stop as the adapter must meet it: only on linear, only with a position,
// a distance on the tick (0.10 for BTCUSDT), tpslMode Full, the same value
// twice "not modified" (34040), reported by the position list, adjusted
// with the position's size and dropped when the position closes.
func TestFakeHoldsAPositionsTrailingStop(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	call := func(method, path, payload string, out any) (int, string) {
		t.Helper()
		resp, err := http.DefaultClient.Do(signedRequest(t, f.URL, method, path, payload, now, bybitfake.DefaultAPISecret))
		require.NoError(t, err)
		defer resp.Body.Close()
		var env struct {
			RetCode int             `json:"retCode"`
			RetMsg  string          `json:"retMsg"`
			Result  json.RawMessage `json:"result"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		if out != nil {
			require.NoError(t, json.Unmarshal(env.Result, out))
		}
		return env.RetCode, env.RetMsg
	}
	set := func(body string) (int, string) {
		t.Helper()
		return call(http.MethodPost, bybitfake.PathTradingStop, body, nil)
	}
	listed := func() string {
		t.Helper()
		var res struct {
			List []struct {
				TrailingStop string `json:"trailingStop"`
			} `json:"list"`
		}
		code, msg := call(http.MethodGet, bybitfake.PathPositions, "category=linear&symbol=BTCUSDT", &res)
		require.Zero(t, code, msg)
		require.Len(t, res.List, 1)
		return res.List[0].TrailingStop
	}
	full := func(ts string) string {
		return `{"category":"linear","symbol":"BTCUSDT","tpslMode":"Full","positionIdx":0,"trailingStop":"` + ts + `"}`
	}

	code, msg := set(full("600"))
	require.Equal(t, 10001, code)
	require.Contains(t, msg, "zero position", "no position, no trailing stop")

	f.SetPosition("BTCUSDT", "Buy", mustDec("0.01"))
	code, _ = set(`{"category":"spot","symbol":"BTCUSDT","tpslMode":"Full","positionIdx":0,"trailingStop":"600"}`)
	require.Equal(t, 10001, code, "trading-stop takes no spot")
	code, msg = set(`{"category":"linear","symbol":"BTCUSDT","tpslMode":"Partial","positionIdx":0,"trailingStop":"600"}`)
	require.Equal(t, 10001, code)
	require.Contains(t, msg, "Full")
	code, _ = set(full("600.05"))
	require.Equal(t, 10001, code, "a distance off the 0.10 tick")
	code, _ = set(full("-1"))
	require.Equal(t, 10001, code)
	require.Equal(t, "0.00", listed(), "nothing refused was set")

	code, msg = set(full("600"))
	require.Zero(t, code, msg)
	require.Equal(t, "600", listed())
	code, msg = set(full("600.0"))
	require.Equal(t, 34040, code, "the same distance again is not modified")
	require.Contains(t, msg, "not modified")
	require.Equal(t, 1, f.TrailingStopSets("BTCUSDT"))

	f.SetPosition("BTCUSDT", "Buy", mustDec("0.02"))
	require.Equal(t, "600", listed(), "the setting follows the position's size")
	f.SetPosition("BTCUSDT", "", mustDec("0"))
	require.Equal(t, "0.00", listed(), "Bybit drops the trailing stop with its position")
	require.True(t, f.TrailingStop("BTCUSDT").IsZero())

	f.SetPosition("BTCUSDT", "Sell", mustDec("0.01"))
	require.Equal(t, "0.00", listed(), "a new position starts without one")
	code, msg = set(full("500"))
	require.Zero(t, code, msg)
	code, msg = set(full("0"))
	require.Zero(t, code, msg, "0 cancels the trailing stop")
	require.Equal(t, "0.00", listed())
}
