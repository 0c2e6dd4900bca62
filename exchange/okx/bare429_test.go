package okx_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// A front (a CDN, a load balancer, OKX's own edge) forwards the placement,
// OKX books and fills it, and the answer that comes back is HTTP 429 with
// no OKX JSON (an HTML page, or a body cut off). OKX documents 429 for
// 50011 ("Rate limit reached") and for 50013 ("Systems are busy"), which
// the adapter's own table reads as unknown; without the body the two
// cannot be told apart, and docs/venues/okx.md says "An answer without
// OKX's JSON (a proxy's status) is unknown". The adapter read it as rate
// limited, i.e. nothing placed: the gateway then settled the intent
// `unsent` and the sender's retry re-sent the same clOrdId without a
// lookup, which OKX accepts once the first order has filled.
func TestBare429OnPlacementIsUnknown(t *testing.T) {
	t.Parallel()
	fake := okxfake.New(t, okxfake.Options{})
	target, err := url.Parse(fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/v5/trade/order" {
			body, _ := io.ReadAll(r.Body)
			req, _ := http.NewRequestWithContext(r.Context(), r.Method, fake.URL+r.URL.RequestURI(), bytes.NewReader(body))
			req.Header = r.Header.Clone()
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, "<html><body>429 Too Many Requests</body></html>")
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	v, err := okx.New(okx.Config{Market: okx.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
		BaseURL: front.URL, Now: fake.Now, ConfirmWait: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)

	_, err = v.Place(ctx(t), order("hxbare42900000000000000000000001", "BTCUSDT", "buy", "0.01"))
	require.Error(t, err)
	require.Len(t, fake.Orders(), 1, "OKX booked the order behind the 429")
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome,
		"a bare 429 after the request was written must be reconciled, not read as nothing placed (got %v)", err)
	require.NotErrorIs(t, err, exchange.ErrUnreachable)
}
