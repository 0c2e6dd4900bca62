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
	"testing"
	"time"

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
