package bybitfake_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// signedRequest builds a request signed the way Bybit documents, with a
// timestamp the caller chooses.
func signedRequest(t *testing.T, base, method, path, payload string, ts time.Time, secret string) *http.Request {
	t.Helper()
	target, body := base+path, io.Reader(nil)
	if method == http.MethodGet {
		target += "?" + payload
	} else {
		body = strings.NewReader(payload)
	}
	req, err := http.NewRequest(method, target, body)
	require.NoError(t, err)
	stamp := strconv.FormatInt(ts.UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(stamp + bybitfake.DefaultAPIKey + "5000" + payload))
	req.Header.Set("X-BAPI-API-KEY", bybitfake.DefaultAPIKey)
	req.Header.Set("X-BAPI-TIMESTAMP", stamp)
	req.Header.Set("X-BAPI-RECV-WINDOW", "5000")
	req.Header.Set("X-BAPI-SIGN", hex.EncodeToString(mac.Sum(nil)))
	return req
}

func retCode(t *testing.T, req *http.Request) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env struct {
		RetCode int `json:"retCode"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	return env.RetCode
}

func TestFakeChecksSignatureAndTimestampWindow(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	q := "category=linear&orderLinkId=x&symbol=BTCUSDT"
	get := func(ts time.Time, secret string) int {
		return retCode(t, signedRequest(t, f.URL, http.MethodGet, bybitfake.PathRealtime, q, ts, secret))
	}
	require.Equal(t, 0, get(now, bybitfake.DefaultAPISecret))
	require.Equal(t, 10004, get(now, "wrong"))
	// Bybit's rule: server_time - recv_window <= timestamp < server_time + 1000.
	require.Equal(t, 0, get(now.Add(-5*time.Second), bybitfake.DefaultAPISecret))
	require.Equal(t, 10002, get(now.Add(-5001*time.Millisecond), bybitfake.DefaultAPISecret))
	require.Equal(t, 0, get(now.Add(999*time.Millisecond), bybitfake.DefaultAPISecret))
	require.Equal(t, 10002, get(now.Add(time.Second), bybitfake.DefaultAPISecret))

	body := `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"50000","orderLinkId":"abc"}`
	post := func() int {
		return retCode(t, signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, body, now, bybitfake.DefaultAPISecret))
	}
	require.Equal(t, 0, post())
	// Cancelling the order does not free its orderLinkId.
	require.True(t, f.UpdateOrder(bybitfake.CategorySpot, "abc", func(o *bybitfake.Order) { o.Status = "Cancelled" }))
	require.Equal(t, 170141, post())
}

// After ExhaustLimit the next successful answer reports the limit used up,
// and the fake refuses the endpoint (10006, nothing executed) until the
// reset it announced; other endpoints are not limited.
func TestFakeExhaustLimitRefusesUntilReset(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var elapsed atomic.Int64 // the fake reads its clock on its own goroutines
	clock := func() time.Time { return start.Add(time.Duration(elapsed.Load())) }
	f := bybitfake.New(t, bybitfake.Options{Now: clock})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	f.ExhaustLimit(bybitfake.PathCreate, 2*time.Second)
	place := func(link string) (*http.Response, int) {
		body := `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","orderLinkId":"` + link + `"}`
		resp, err := http.DefaultClient.Do(signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, body, clock(), bybitfake.DefaultAPISecret))
		require.NoError(t, err)
		defer resp.Body.Close()
		var env struct {
			RetCode int `json:"retCode"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		return resp, env.RetCode
	}

	resp, code := place("first")
	require.Equal(t, 0, code)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "0", resp.Header.Get("X-Bapi-Limit-Status"))
	reset := strconv.FormatInt(start.Add(2*time.Second).UnixMilli(), 10)
	require.Equal(t, reset, resp.Header.Get("X-Bapi-Limit-Reset-Timestamp"))

	_, code = place("second")
	require.Equal(t, 10006, code)
	_, booked := f.Order(bybitfake.CategoryLinear, "second")
	require.False(t, booked, "a refused request executes nothing")
	q := "category=linear&orderLinkId=first&symbol=BTCUSDT"
	require.Equal(t, 0, retCode(t, signedRequest(t, f.URL, http.MethodGet, bybitfake.PathRealtime, q, clock(), bybitfake.DefaultAPISecret)))

	elapsed.Add(int64(2 * time.Second))
	resp, code = place("second")
	require.Equal(t, 0, code)
	require.NotEqual(t, "0", resp.Header.Get("X-Bapi-Limit-Status"))
	require.Len(t, f.Orders(), 2)
}

func TestFakeStartServesACLI(t *testing.T) {
	f, err := bybitfake.Start("127.0.0.1:0", bybitfake.Options{})
	require.NoError(t, err)
	t.Cleanup(f.Close)
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	resp, err := http.Get(f.URL + bybitfake.PathTime)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// History queries span at most 7 days (order-list.mdx, startTime/endTime):
// a wider range is refused with a parameter error.
func TestFakeHistoryRangeAtMostSevenDays(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	query := func(span time.Duration) int {
		end := now.Add(-time.Hour)
		q := "category=linear&endTime=" + strconv.FormatInt(end.UnixMilli(), 10) +
			"&orderLinkId=x&startTime=" + strconv.FormatInt(end.Add(-span).UnixMilli(), 10) + "&symbol=BTCUSDT"
		return retCode(t, signedRequest(t, f.URL, http.MethodGet, bybitfake.PathHistory, q, now, bybitfake.DefaultAPISecret))
	}
	require.Equal(t, 0, query(7*24*time.Hour))
	require.Equal(t, 10001, query(7*24*time.Hour+time.Millisecond))
}

// With a positive fee rate Bybit spot charges a buy in the base coin and a
// sell in the quote coin (docs/v5 enum "Spot Fee Currency Instruction"),
// out of what the fill credited, and the order reports it as cumExecFee
// (docs/v5/order/order-list.mdx).
func TestFakeSpotFeeIsChargedInTheReceivedCoin(t *testing.T) {
	now := time.Now()
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	f.SetSpotFeeRate(decimal.RequireFromString("0.001"))
	for _, o := range []struct{ side, qty string }{{"Buy", "0.01"}, {"Sell", "0.005"}} {
		body := `{"category":"spot","symbol":"BTCUSDT","side":"` + o.side + `","orderType":"Market","qty":"` + o.qty +
			`","marketUnit":"baseCoin","orderLinkId":"fee-` + o.side + `"}`
		require.Equal(t, 0, retCode(t, signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, body, now, bybitfake.DefaultAPISecret)))
	}
	for _, o := range f.Orders() {
		switch o.Side {
		case "Buy":
			require.Equal(t, "0.00001", o.CumExecFee.String(), "0.1 %% of the 0.01 BTC bought, in BTC")
		case "Sell":
			require.Equal(t, o.CumExecQty.Mul(o.AvgPrice).Mul(decimal.RequireFromString("0.001")).Truncate(8).String(), o.CumExecFee.String(),
				"0.1 %% of the USDT received")
		}
	}
	require.Equal(t, "0.00499", f.Balance("BTC").WalletBalance.String(), "bought 0.01 less the fee in BTC, sold 0.005")

	q := "category=spot&orderLinkId=fee-Buy&symbol=BTCUSDT"
	req := signedRequest(t, f.URL, http.MethodGet, bybitfake.PathRealtime, q, now, bybitfake.DefaultAPISecret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env struct {
		Result struct {
			List []map[string]any `json:"list"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	require.Len(t, env.Result.List, 1)
	require.Equal(t, "0.00001", env.Result.List[0]["cumExecFee"])
}

// A resting limit order that filled in part and is then cancelled on
// Bybit's side ends as enum.mdx names it: PartiallyFilledCanceled on spot
// ("Only spot has this order status"), Cancelled with its executed
// quantity on linear ("In derivatives, orders with this status may have an
// executed qty"); one that filled nothing is Cancelled. A second cancel
// finds nothing open.
func TestFakeCancelAtTheVenueKeepsWhatFilledUnderBybitsStatusNames(t *testing.T) {
	now := time.Now()
	f := bybitfake.New(t, bybitfake.Options{Now: func() time.Time { return now }})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	for _, c := range []struct{ category, link, fill, status string }{
		{bybitfake.CategorySpot, "vc-spot", "0.004", "PartiallyFilledCanceled"},
		{bybitfake.CategoryLinear, "vc-linear", "0.004", "Cancelled"},
		{bybitfake.CategorySpot, "vc-none", "0", "Cancelled"},
	} {
		body := `{"category":"` + c.category + `","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"50000","orderLinkId":"` + c.link + `"}`
		require.Equal(t, 0, retCode(t, signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, body, now, bybitfake.DefaultAPISecret)))
		if fill := decimal.RequireFromString(c.fill); fill.IsPositive() {
			require.True(t, f.PartialFill(c.category, c.link, fill))
		}
		require.True(t, f.CancelOrder(c.category, c.link))
		require.False(t, f.CancelOrder(c.category, c.link), "no longer open")
		o, ok := f.Order(c.category, c.link)
		require.True(t, ok)
		require.Equal(t, c.status, o.Status, c.link)
		require.Equal(t, c.fill, o.CumExecQty.String(), "what filled is kept")
	}
}

// instruments-info "By default returns only Trading symbols", and "Spot
// has Trading only" (market/instrument.mdx, request parameter status): a
// Closed linear contract is listed only when asked for by status, a spot
// pair that is not Trading never; an order on either is refused.
func TestFakeInstrumentsListOnlyTradingSymbolsByDefault(t *testing.T) {
	f := bybitfake.New(t, bybitfake.Options{})
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	d := decimal.RequireFromString
	f.SetInstrument(bybitfake.CategoryLinear, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
		TickSize: d("0.10"), QtyStep: d("0.001"), MinOrderQty: d("0.001"), MinNotional: d("5"), Status: "Closed"})
	f.SetInstrument(bybitfake.CategorySpot, bybitfake.Instrument{Symbol: "BTCUSDT", BaseCoin: "BTC", QuoteCoin: "USDT",
		TickSize: d("0.1"), QtyStep: d("0.000001"), MinNotional: d("5"), Status: "Closed"})
	listed := func(query string) []string {
		resp, err := http.Get(f.URL + bybitfake.PathInstruments + "?" + query)
		require.NoError(t, err)
		defer resp.Body.Close()
		var env struct {
			Result struct {
				List []struct {
					Symbol string `json:"symbol"`
					Status string `json:"status"`
				} `json:"list"`
			} `json:"result"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
		var out []string
		for _, in := range env.Result.List {
			out = append(out, in.Symbol+":"+in.Status)
		}
		return out
	}
	require.Empty(t, listed("category=linear&symbol=BTCUSDT"))
	require.Equal(t, []string{"BTCUSDT:Closed"}, listed("category=linear&symbol=BTCUSDT&status=Closed"))
	require.Equal(t, []string{"ETHUSDT:Trading"}, listed("category=linear"))
	require.Empty(t, listed("category=spot&symbol=BTCUSDT&status=Closed"))

	now := time.Now()
	for cat, code := range map[string]int{bybitfake.CategoryLinear: 10001, bybitfake.CategorySpot: 170121} {
		body := `{"category":"` + cat + `","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"50000","orderLinkId":"closed-` + cat + `"}`
		require.Equal(t, code, retCode(t, signedRequest(t, f.URL, http.MethodPost, bybitfake.PathCreate, body, now, bybitfake.DefaultAPISecret)), cat)
	}
}
