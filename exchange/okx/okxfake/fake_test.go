package okxfake_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// send posts body to the fake signed as OKX documents, stamped at, with
// expTime when it is not zero; it returns the answer's code (or the
// order's sCode under code 1).
func send(t *testing.T, f *okxfake.Server, secret string, at, expTime time.Time, body string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.URL+"/api/v5/trade/order", strings.NewReader(body))
	require.NoError(t, err)
	ts := okx.Timestamp(at)
	req.Header.Set("OK-ACCESS-KEY", f.APIKey())
	req.Header.Set("OK-ACCESS-PASSPHRASE", f.Passphrase())
	req.Header.Set("OK-ACCESS-TIMESTAMP", ts)
	req.Header.Set("OK-ACCESS-SIGN", okx.Sign(secret, ts, http.MethodPost, "/api/v5/trade/order", body))
	if !expTime.IsZero() {
		req.Header.Set("expTime", strconv.FormatInt(expTime.UnixMilli(), 10))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var env struct {
		Code string `json:"code"`
		Data []struct {
			SCode string `json:"sCode"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&env))
	if env.Code == "1" && len(env.Data) > 0 {
		return env.Data[0].SCode
	}
	return env.Code
}

// The fake refuses what OKX refuses: a bad signature, a stale timestamp,
// an order past its expTime, a clOrdId held by a pending order; and it
// accepts a filled order's clOrdId again.
func TestFakeEnforcesOKXRules(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	now := f.Now()
	limit := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"hxrest","side":"buy","ordType":"limit","px":"1000.0","sz":"0.001"}`
	market := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"hxfill","side":"buy","ordType":"market","sz":"0.001","tgtCcy":"base_ccy"}`

	require.Equal(t, "50113", send(t, f, "wrong-secret", now, time.Time{}, limit), "bad signature")
	require.Equal(t, "50102", send(t, f, f.APISecret(), now.Add(-time.Minute), time.Time{}, limit), "timestamp outside 30 s")
	require.Equal(t, "50037", send(t, f, f.APISecret(), now, now.Add(-time.Millisecond), limit), "expTime passed")
	require.Empty(t, f.Orders())

	require.Equal(t, "0", send(t, f, f.APISecret(), now, now.Add(5*time.Second), limit))
	require.Equal(t, "51016", send(t, f, f.APISecret(), now, time.Time{}, limit), "held by a pending order")
	require.Equal(t, "0", send(t, f, f.APISecret(), now, time.Time{}, market))
	require.Equal(t, "0", send(t, f, f.APISecret(), now, time.Time{}, market), "a filled order's clOrdId is accepted again")
	require.Len(t, f.Orders(), 3)

	bad := strings.Replace(market, `"sz":"0.001"`, `"sz":"0.000000001"`, 1)
	require.Equal(t, "51121", send(t, f, f.APISecret(), now, time.Time{}, bad), "not a multiple of the lot size")
}

// OKX spot charges its fee in the currency the order received and
// reports it negative, with feeCcy, on the order.
func TestFakeSpotFeeIsChargedInTheReceivedCurrency(t *testing.T) {
	t.Parallel()
	f := okxfake.New(t, okxfake.Options{})
	f.SetBalance("BTC", decimal.Zero)
	f.SetSpotFeeRate(decimal.RequireFromString("0.001"))
	market := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"hxfee","side":"buy","ordType":"market","sz":"0.01","tgtCcy":"base_ccy"}`
	require.Equal(t, "0", send(t, f, f.APISecret(), f.Now(), time.Time{}, market))
	o := f.Orders()[0]
	require.Equal(t, "-0.00001", o.Fee.String())
	require.Equal(t, "BTC", o.FeeCcy)
	require.Equal(t, "0.00999", f.Balance("BTC").String())
}
