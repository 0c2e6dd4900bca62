package okx_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// As on Bybit and Binance: the long holds 1 contract (0.01 BTC, the entry's
// 0.01005 rounded down to the 0.0001 BTC lot); the exit "sell 0.01005"
// goes out as 1 contract and only closes it: no leverage is set (counted
// unrounded against the position, it was, and OKX refusing the change
// refused the exit).
func TestSwapReducingSellWithUnroundedCountIsNotRefusedOverLeverage(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("1"))
	fake.RefuseLeverage(true)
	o := order("hxreduce1", "BTCUSDT", "sell", "0.01005")
	o.Leverage = 9
	r, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, "a sell that only closes the long, refused over a leverage change: %s", r.Reason)
	require.True(t, fake.Position("BTC-USDT-SWAP").IsZero(), "position %s", fake.Position("BTC-USDT-SWAP"))
}

// OKX documents codes that mean "not now, try again" with HTTP statuses
// below 500 and no table entry in hoox: 50005 (HTTP 410, "API endpoint is
// inactive or unavailable"), 50046 and 50020/50022 (HTTP 200, "...
// temporarily unavailable ... Please try again later", "frozen due to
// forced liquidation. Please try again later"; OKX/Error_Code/Rest_API/
// Public.md). On set-leverage they are a retry (503, nothing placed), not
// the entry's refusal for good, which would tell the sender never to
// resend a signal that a retry would have placed.
func TestSwapTransientSetLeverageCodeIsNotARefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		code   string
		msg    string
	}{
		{http.StatusGone, "50005", "API endpoint is inactive or unavailable."},
		{http.StatusOK, "50046", "This feature is temporarily unavailable while we make some improvements to it. Please try again later."},
	} {
		t.Run(c.code, func(t *testing.T) {
			t.Parallel()
			_, fake := setup(t, okx.MarketSwap)
			target, err := url.Parse(fake.URL)
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(target)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/api/v5/account/set-leverage" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(c.status)
					fmt.Fprintf(w, `{"code":%q,"msg":%q,"data":[]}`, c.code, c.msg)
					return
				}
				proxy.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			v, _ := setup(t, okx.MarketSwap, func(cfg *okx.Config) {
				cfg.BaseURL, cfg.APIKey, cfg.APISecret, cfg.Passphrase, cfg.Now = srv.URL, fake.APIKey(), fake.APISecret(), fake.Passphrase(), fake.Now
			})
			o := order("hxtransient"+c.code, "BTCUSDT", "buy", "0.01")
			o.Leverage = 7
			r, err := v.Place(ctx(t), o)
			require.Emptyf(t, fake.Orders(), "nothing sent")
			require.ErrorIsf(t, err, exchange.ErrUnreachable, "a transient OKX answer to set-leverage is the entry's refusal for good: status %s, reason %q", r.Status, r.Reason)
		})
	}
}
