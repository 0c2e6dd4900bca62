package bybit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// Bybit's 10004 "error sign!" quotes the string it signed; an answer may
// quote the signature and, to be sure, the secret. None of them reaches a
// log, an error or a rejected order's reason (which become the order's
// reason, trace events, notifications and the sender's answer): only the
// API key was redacted, the signature went through as sent.
func TestBybitErrorTextNeverCarriesACredential(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		code int
	}{{"credentials refused", 10004}, {"order rejected", 110007}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var signs sync.Map
			var front *httptest.Server
			b := setup(t, bybit.MarketLinear, func(cfg *bybit.Config) {
				target, err := url.Parse(cfg.BaseURL)
				require.NoError(t, err)
				proxy := httputil.NewSingleHostReverseProxy(target)
				front = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != bybitfake.PathCreate {
						proxy.ServeHTTP(w, r)
						return
					}
					sign := r.Header.Get("X-BAPI-SIGN")
					signs.Store(sign, true)
					echo := fmt.Sprintf("error sign! origin_string[%s%s] sign %s secret %s", r.Header.Get("X-BAPI-TIMESTAMP"),
						r.Header.Get("X-BAPI-API-KEY"), sign, bybitfake.DefaultAPISecret)
					w.Header().Set("Content-Type", "application/json")
					_, _ = fmt.Fprintf(w, `{"retCode":%d,"retMsg":%q,"result":{},"retExtInfo":{},"time":0}`, c.code, echo)
				}))
				t.Cleanup(front.Close)
				cfg.BaseURL = front.URL
			})

			rep, err := b.venue.Place(context.Background(), marketOrder("BTCUSDT", "buy", "0.01"))
			text := rep.Reason
			if err != nil {
				text += " " + err.Error()
			}
			require.Contains(t, text, "error sign!", "the venue's message is still there, redacted")
			secrets := []string{bybitfake.DefaultAPIKey, bybitfake.DefaultAPISecret}
			signs.Range(func(k, _ any) bool { secrets = append(secrets, k.(string)); return true })
			require.Len(t, secrets, 3, "the order was sent once")
			for _, s := range secrets {
				require.NotContains(t, text, s, "the answer carries a credential")
				require.NotContains(t, b.logs.String(), s, "the log carries a credential")
			}
		})
	}
}

// A base URL's password (a proxy's basic auth) is not in the adapter's
// logged configuration.
func TestBybitLoggedConfigHidesTheBaseURLsPassword(t *testing.T) {
	t.Parallel()
	cfg := bybit.Config{Market: bybit.MarketLinear, APIKey: "k", APISecret: "s", BaseURL: "https://proxyuser:pr0xy-pass@proxy.example/bybit"}
	logged := cfg.LogValue().String()
	require.NotContains(t, logged, "pr0xy-pass")
	require.Contains(t, logged, "proxy.example/bybit")
}
