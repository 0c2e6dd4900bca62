package okx_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// amendedTP stands in front of the fake and shows every order's attached
// take-profit as amended at OKX to tp: POST /api/v5/trade/amend-order
// takes attachAlgoOrds[].newTpTriggerPx for a pending swap order
// (OKX/Order_Book_Trading/Trade/Post_Amend_Order.md: "attachAlgoId ... It
// is required to identity the TP/SL order when amending";
// "newTpTriggerPx ... Only applicable to Expiry Futures and Perpetual
// Futures"), and OKX's app lets the user edit a pending order's TP/SL the
// same way. The fake has no amend endpoint, so the proxy rewrites GET
// /api/v5/trade/order's answer as OKX would list the amended order.
func amendedTP(t *testing.T, fake *okxfake.Server, tp string, on *bool) string {
	t.Helper()
	target, err := url.Parse(fake.URL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !*on || resp.Request.Method != http.MethodGet || resp.Request.URL.Path != "/api/v5/trade/order" {
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
					m := o.(map[string]any)
					if algos, ok := m["attachAlgoOrds"].([]any); ok {
						for _, a := range algos {
							a.(map[string]any)["tpTriggerPx"] = tp
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

// A resting okx-swap limit entry with a take-profit, whose take-profit the
// user then moved at OKX (amend-order, or OKX's app), is never followed
// again: Lookup compares the attached exits with the signal's on every
// call, not only when adopting an order of unknown origin, so the follow
// job's look (jobs/follow.go look → venue.Lookup) gets ErrMismatch on
// every pass, logs "venue not asked" and snoozes for ever. The entry's
// fill is never recorded (its trailing-stop leg, planned for the fill, is
// never placed), and a cancel signal cancels the order at OKX but answers
// an error (Cancel's look-up after the cancel fails the same way).
func TestFilledEntryWhoseTakeProfitWasAmendedAtOKXIsStillFollowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		cancel bool
	}{{"FillIsRecorded", false}, {"CancelIsAnswered", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := okxfake.New(t, okxfake.Options{})
			amended := false
			base := amendedTP(t, fake, "62000", &amended)
			v, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
				BaseURL: base, Now: fake.Now, ConfirmWait: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			require.NoError(t, err)

			o := order("hxamendtp"+tc.name, "BTCUSDT", "buy", "0.01")
			o.OrderType, o.Price = "limit", decimal.NewNullDecimal(d("59000"))
			o.TakeProfit = at("61000")
			placed, err := v.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, placed.Status)

			amended = true // the user moves the take-profit to 62000 at OKX
			if tc.cancel {
				r, err := v.Cancel(ctx(t), o)
				require.NoError(t, err, "the order was cancelled at OKX; the cancel must say so")
				require.Equal(t, exchange.StatusCancelled, r.Status)
				return
			}
			require.NoError(t, fake.FillOrder(o.ClientOrderID))
			r, err := v.Lookup(ctx(t), o)
			require.NoError(t, err, "the follow job's look of the recorded entry must see its fill")
			require.Equal(t, exchange.StatusFilled, r.Status)
		})
	}
}
