package binancefake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// post sends a signed order with params split between the query string and
// the body, signed over both as Binance documents.
func post(t *testing.T, s *binancefake.Server, query, body, secret string) (int, map[string]any) {
	t.Helper()
	sig := binance.Sign(secret, query+body)
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, s.URL+"/api/v3/order?"+query, strings.NewReader(body+"&signature="+sig))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-MBX-APIKEY", s.APIKey())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(raw, &out), string(raw))
	return resp.StatusCode, out
}

func TestSignatureOverQueryAndBody(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
	query := "symbol=BTCUSDT&side=BUY&type=MARKET"
	body := "quantity=0.01&newClientOrderId=abc&recvWindow=5000&timestamp=" + ts

	status, out := post(t, s, query, body, "wrong")
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1022, out["code"])
	require.Equal(t, 0, s.Placements("abc"))

	status, out = post(t, s, query, body, s.APISecret())
	require.Equal(t, http.StatusOK, status, out)
	require.Equal(t, "FILLED", out["status"])
	require.Equal(t, 1, s.Placements("abc"))
}

func TestTimestampWindow(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	for _, skew := range []time.Duration{-6 * time.Second, 2 * time.Second} {
		ts := strconv.FormatInt(s.Now().Add(skew).UnixMilli(), 10)
		status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&recvWindow=5000&timestamp="+ts, s.APISecret())
		require.Equal(t, http.StatusBadRequest, status)
		require.EqualValues(t, -1021, out["code"], skew)
	}
}

func TestStart(t *testing.T) {
	t.Parallel()
	s, err := binancefake.Start("127.0.0.1:0", binancefake.Options{})
	require.NoError(t, err)
	resp, err := http.Get(s.URL + "/fapi/v1/time")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, resp.Body.Close())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

// The matching engine checks the timestamp a second time (rest-api.md,
// "Timing security"): an order whose recvWindow ran out while it was being
// processed is refused unexecuted, -1021 on spot, -5028 on futures.
func TestMatchingEngineRechecksTimestamp(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	s := binancefake.New(t, binancefake.Options{Now: clock, Sleep: advance})
	s.SetMatchingDelay(4 * time.Second)
	ts := func() string { return strconv.FormatInt(s.Now().UnixMilli(), 10) }

	status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&newClientOrderId=in-time&recvWindow=5000&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusOK, status, out)

	status, out = post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET", "quantity=0.01&newClientOrderId=late&recvWindow=3000&timestamp="+ts(), s.APISecret())
	require.Equal(t, http.StatusBadRequest, status)
	require.EqualValues(t, -1021, out["code"])
	require.Equal(t, 0, s.Placements("late"))

	log := s.RequestLog("/api/v3/order")
	require.Len(t, log, 2)
	require.Equal(t, 3*time.Second, log[1].RecvWindow)
	require.False(t, log[1].Timestamp.IsZero())
}

// Binance spot takes its commission out of what an order receives (the
// base asset of a buy, the quote of a sell) unless BNB pays it, and the
// FULL response reports it per fill (faqs/commission_faq.md, rest-api.md
// fills[].commission/commissionAsset).
func TestSpotCommissionIsTakenFromTheReceivedAssetAndReported(t *testing.T) {
	t.Parallel()
	s := binancefake.New(t, binancefake.Options{})
	s.SetSpotCommission(decimal.RequireFromString("0.001"))
	ts := strconv.FormatInt(s.Now().UnixMilli(), 10)
	status, out := post(t, s, "symbol=BTCUSDT&side=BUY&type=MARKET&newOrderRespType=FULL",
		"quantity=0.010&newClientOrderId=fee1&recvWindow=5000&timestamp="+ts, s.APISecret())
	require.Equal(t, http.StatusOK, status, out)
	fills, _ := out["fills"].([]any)
	require.Len(t, fills, 2)
	total := decimal.Zero
	for _, f := range fills {
		fill := f.(map[string]any)
		require.Equal(t, "BTC", fill["commissionAsset"])
		total = total.Add(decimal.RequireFromString(fill["commission"].(string)))
	}
	require.Equal(t, "0.00001", total.String(), "0.1 %% of the 0.010 BTC received")
	require.Equal(t, "0.00999", s.Balance("BTC").String(), "the account received the quantity less the commission")
}
