package binance_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// answerLeverageWith puts a proxy in front of the fake that answers POST
// /fapi/v1/leverage with Binance's {code, msg} and HTTP status, as USDⓈ-M
// does (400) for a leverage change it refuses (error-code.md,
// 41xx/42xx/44xx: -4161 ISOLATED_LEVERAGE_REJECT_WITH_POSITION, -4203
// ADJUST_LEVERAGE_ONE_MONTH_FAILED, -4209 ADJUST_LEVERAGE_SYMBOL_FAILED,
// -4403 ADJUST_LEVERAGE_COMPLIANCE_FAILED). Everything else goes to the
// fake unchanged (signatures included).
func answerLeverageWith(t *testing.T, b *testBundle, status, code int, msg string) *binance.Venue {
	t.Helper()
	target, err := url.Parse(b.fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/fapi/v1/leverage" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"code":%d,"msg":%q}`, code, msg)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := b.cfg
	cfg.BaseURL = srv.URL
	v, err := binance.New(cfg)
	require.NoError(t, err)
	return v
}

// A leverage change Binance refuses for good is the entry's refusal (a
// rejected report: 422 with Binance's reason), as Bybit's untabled
// set-leverage refusals are (TestUnlistedLeverageRefusalIsRejectedNotUnreachable).
// The documented set-leverage refusals are not in errorClasses, so they
// classify unknown, and POST /leverage is no placement: unknown there once
// unwrapped to ErrUnreachable, "nothing was placed, retry" (503) on every
// resend of a signal that can never pass. A code Binance adds later is
// refused the same way (-4299 below is not documented).
func TestFuturesDocumentedLeverageRefusalIsRejectedNotUnreachable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code int
		msg  string
	}{
		{-4161, "Leverage reduction is not supported in Isolated Margin Mode with open positions"},
		{-4203, "More than 20x leverage is available one month after account registration."},
		{-4209, "Leverage adjustment failed. Current symbol max leverage limit is 20x"},
		{-4403, "Dear user, as per our Terms of Use and compliance with local regulations, the leverage can only up to 10x in your region"},
		{-4299, "A leverage refusal hoox does not know yet"},
	} {
		t.Run(fmt.Sprint(c.code), func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			b.fake.SetPosition("BTCUSDT", d("0.5"))
			v := answerLeverageWith(t, b, http.StatusBadRequest, c.code, c.msg)
			o := marketOrder("buy", "0.01")
			o.Leverage = 5
			r, err := v.Place(context.Background(), o)
			require.Falsef(t, errors.Is(err, exchange.ErrUnreachable), "a refused leverage change read as an unreachable venue (503, resend for ever): %v", err)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusRejected, r.Status)
			require.Contains(t, r.Reason, c.msg)
			require.Zero(t, b.fake.Requests(b.path), "nothing sent")
		})
	}
}

// A leverage change that failed for a reason that passes — a tabled
// transient code (-1001 DISCONNECTED, -1008 overloaded) or a 5xx — is no
// refusal: nothing was placed and the venue is unreachable (503), so
// TradingView's resend can pass. Treating every answered code as a
// refusal would reject such an entry for good (Bybit's
// TestTransientLeverageErrorIsNotARefusal).
func TestFuturesTransientLeverageErrorIsNotARefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status, code int
		msg          string
	}{
		{http.StatusBadRequest, -1001, "Internal error; unable to process your request. Please try again."},
		{http.StatusBadRequest, -1008, "Server is currently overloaded with other requests. Please try again in a few minutes."},
		{http.StatusServiceUnavailable, -4299, "Service Unavailable."},
	} {
		t.Run(fmt.Sprint(c.status, c.code), func(t *testing.T) {
			t.Parallel()
			b := setup(t, binance.MarketFutures)
			v := answerLeverageWith(t, b, c.status, c.code, c.msg)
			o := marketOrder("buy", "0.01")
			o.Leverage = 5
			_, err := v.Place(context.Background(), o)
			require.ErrorIs(t, err, exchange.ErrUnreachable)
			require.Zero(t, b.fake.Requests(b.path), "nothing sent")
		})
	}
}
