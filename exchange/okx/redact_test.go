package okx_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// lockedBuffer is a log sink the adapter may write from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An error message that quotes the request — the key, passphrase and
// signature OKX received (and, to be sure, the secret) — reaches no log,
// error or reason: the placement's error (or rejected report) becomes the
// order's reason, a trace event, a notification and the sender's answer.
// OKX's text was passed through as it came.
func TestOKXErrorTextNeverCarriesACredential(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, code string }{
		{"credentials refused", "50113"},
		{"order rejected", "51008"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fake := okxfake.New(t, okxfake.Options{})
			target, err := url.Parse(fake.URL)
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(target)
			var signs sync.Map
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost || r.URL.Path != "/api/v5/trade/order" {
					proxy.ServeHTTP(w, r)
					return
				}
				sign := r.Header.Get("OK-ACCESS-SIGN")
				signs.Store(sign, true)
				echo := fmt.Sprintf("key %s passphrase %s sign %s secret %s", r.Header.Get("OK-ACCESS-KEY"),
					r.Header.Get("OK-ACCESS-PASSPHRASE"), sign, fake.APISecret())
				w.Header().Set("Content-Type", "application/json")
				_, _ = fmt.Fprintf(w, `{"code":"1","msg":%q,"data":[{"clOrdId":"","ordId":"","sCode":%q,"sMsg":%q}]}`, echo, c.code, echo)
			}))
			t.Cleanup(front.Close)
			logs := &lockedBuffer{}
			v, err := okx.New(okx.Config{Market: okx.MarketSpot, APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
				BaseURL: front.URL, Now: fake.Now, ConfirmWait: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			require.NoError(t, err)

			rep, err := v.Place(ctx(t), order("hxredact000000000000000000000001", "BTCUSDT", "buy", "0.01"))
			text := rep.Reason
			if err != nil {
				text += " " + err.Error()
			}
			require.Contains(t, text, "passphrase", "the venue's message is still there, redacted")
			secrets := []string{fake.APIKey(), fake.APISecret(), fake.Passphrase()}
			signs.Range(func(k, _ any) bool { secrets = append(secrets, k.(string)); return true })
			require.Greater(t, len(secrets), 3, "the order was sent")
			for _, s := range secrets {
				require.NotContains(t, text, s, "the answer carries a credential")
				require.NotContains(t, logs.String(), s, "the log carries a credential")
			}
		})
	}
}

// A base URL's password (a proxy's basic auth) is not in the adapter's
// logged configuration.
func TestOKXLoggedConfigHidesTheBaseURLsPassword(t *testing.T) {
	t.Parallel()
	cfg := okx.Config{Market: okx.MarketSpot, APIKey: "k", APISecret: "s", Passphrase: "p", BaseURL: "https://proxyuser:pr0xy-pass@proxy.example/okx"}
	logged := cfg.LogValue().String()
	require.NotContains(t, logged, "pr0xy-pass")
	require.Contains(t, logged, "proxy.example/okx")
}
