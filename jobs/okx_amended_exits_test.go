package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// slAmendedAtOKX fronts the fake and, once on is set, lists every order's
// attached stop-loss at sl, as OKX lists a pending swap order whose
// stop-loss the user moved (POST /api/v5/trade/amend-order,
// attachAlgoOrds[].newSlTriggerPx: "Only applicable to Expiry Futures and
// Perpetual Futures", OKX/Order_Book_Trading/Trade/Post_Amend_Order.md; or
// the same edit in OKX's app). The fake has no amend endpoint.
func slAmendedAtOKX(t *testing.T, fake *okxfake.Server, sl string, on *atomic.Bool) string {
	t.Helper()
	target, err := url.Parse(fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !on.Load() || resp.Request.Method != http.MethodGet || resp.Request.URL.Path != "/api/v5/trade/order" {
			return nil
		}
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		var env map[string]any
		if json.Unmarshal(raw, &env) == nil {
			if data, ok := env["data"].([]any); ok {
				for _, o := range data {
					if algos, ok := o.(map[string]any)["attachAlgoOrds"].([]any); ok {
						for _, a := range algos {
							a.(map[string]any)["slTriggerPx"] = sl
						}
					}
				}
			}
			raw, _ = json.Marshal(env)
		}
		resp.Body = io.NopCloser(bytes.NewReader(raw))
		resp.ContentLength = int64(len(raw))
		resp.Header.Set("Content-Length", strconv.Itoa(len(raw)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// An okx-swap limit long with a stop-loss (attachAlgoOrds) and a trailing
// stop (a leg planned for its fill) rests; the user moves its stop-loss at
// OKX, then it fills. The follow job's look (venue.Lookup) compares the
// attached exits with the signal's and answers ErrMismatch on every pass:
// it logs "venue not asked" and snoozes for ever, so the fill is never
// recorded and the trailing stop never placed — the position stays open
// without the protection the signal asked for, and nobody is told.
func TestOKXEntryWhoseStopLossWasMovedAtOKXIsStillRecordedFilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := okxfake.New(t, okxfake.Options{}) // BTCUSDT at 60000
	var amended atomic.Bool
	base := slAmendedAtOKX(t, f, "56500", &amended)
	v, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: f.APIKey(), APISecret: f.APISecret(), Passphrase: f.Passphrase(), BaseURL: base})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"okx-swap": v})
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	entry, err := gw.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.05",
		"order_type":"limit","price":"59000","stop_loss":"57000","trailing_stop":{"percent":1.5},"trace_id":"okx-amended"}`))
	require.NoError(t, err)
	require.Equal(t, "open", entry.Order.Status)

	amended.Store(true) // the user moves the stop-loss to 56500 at OKX
	require.NoError(t, f.FillOrder(entry.Order.ClientOrderID))
	res, err := fb.work(t, fb.queuedFollow(t, "k:okx-amended"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the entry filled at OKX: its follow job must record it")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:okx-amended' AND role = 'primary' AND status = 'filled'`))
	require.Len(t, f.TrailingStops(), 1, "the trailing stop planned for the fill is placed")
}
