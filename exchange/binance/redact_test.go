package binance_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance"
)

// An error message that quotes the request — the API key, the signature
// and, to be sure, the secret — reaches no log, error or rejected order's
// reason (which become the order's reason, trace events, notifications
// and the sender's answer). Binance's msg went through as it came.
func TestBinanceErrorTextNeverCarriesACredential(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		code int
	}{{"credentials refused", -1022}, {"order rejected", -2010}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var signs sync.Map
			var secret string
			b := setup(t, binance.MarketSpot, func(cfg *binance.Config) {
				secret = cfg.APISecret
				target, err := url.Parse(cfg.BaseURL)
				require.NoError(t, err)
				proxy := httputil.NewSingleHostReverseProxy(target)
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method != http.MethodPost || r.URL.Path != "/api/v3/order" {
						proxy.ServeHTTP(w, r)
						return
					}
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					form, _ := url.ParseQuery(string(body))
					sign := form.Get("signature") + r.URL.Query().Get("signature")
					signs.Store(sign, true)
					echo := fmt.Sprintf("Signature for this request is not valid: key %s signature %s secret %s query %s",
						r.Header.Get("X-MBX-APIKEY"), sign, secret, string(body))
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = fmt.Fprintf(w, `{"code":%d,"msg":%q}`, c.code, echo)
				}))
				t.Cleanup(front.Close)
				// Reached through a proxy that takes basic auth in the URL.
				cfg.BaseURL = strings.Replace(front.URL, "://", "://proxyuser:pr0xy-pass@", 1)
			})

			rep, err := b.venue.Place(context.Background(), marketOrder("buy", "0.01"))
			text := rep.Reason
			if err != nil {
				text += " " + err.Error()
			}
			require.Contains(t, text, "Signature for this request", "the venue's message is still there, redacted")
			secrets := []string{b.cfg.APIKey, b.cfg.APISecret, "pr0xy-pass"}
			signs.Range(func(k, _ any) bool { secrets = append(secrets, k.(string)); return true })
			require.Len(t, secrets, 4, "the order was sent once")
			for _, s := range secrets {
				require.NotEmpty(t, s)
				require.NotContains(t, text, s, "the answer carries a credential")
				require.NotContains(t, b.logs.String(), s, "the log carries a credential")
			}
		})
	}
}

// A base URL's password (a proxy's basic auth) is not in the adapter's
// logged configuration.
func TestBinanceLoggedConfigHidesTheBaseURLsPassword(t *testing.T) {
	t.Parallel()
	cfg := binance.Config{Market: binance.MarketSpot, APIKey: "k", APISecret: "s", BaseURL: "https://proxyuser:pr0xy-pass@proxy.example/binance"}
	logged := cfg.LogValue().String()
	require.NotContains(t, logged, "pr0xy-pass")
	require.Contains(t, logged, "proxy.example/binance")
}
