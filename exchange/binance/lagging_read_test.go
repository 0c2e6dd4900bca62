package binance_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// lagProxy stands in front of the fake and answers the order query
// (GET …/order) -2013 "Order does not exist." while lagging is set, for
// the queries match selects: the order query trailing the matching engine
// by a moment, as the adapter itself assumes it may (AcceptWindow's
// LookupLag; Lookup: "none yet: the query may lag a placement"). Every
// other request goes to the fake unchanged (the signature stays valid).
type lagProxy struct {
	lagging atomic.Bool
	match   func(q url.Values) bool
	srv     *httptest.Server
}

func newLagProxy(t *testing.T, target string, match func(url.Values) bool) *lagProxy {
	t.Helper()
	p := &lagProxy{match: match}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.lagging.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/order") && p.match(r.URL.Query()) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":-2013,"msg":"Order does not exist."}`)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// A USDⓈ-M exit whose algo order Binance holds — found by its
// clientAlgoId, TRIGGERED/FINISHED, its stop executed — is never "not
// found": the venue holds an order under the ID whatever the query of the
// order it became (actualOrderId) answers a moment after the trigger.
// Read as "not found" (resolveTriggered passed the query's -2013 through),
// the follow job recorded it expired for good and never cancelled its
// sibling, and the leg runner, for an exit whose send answer was lost,
// sent it again under the same clientAlgoId (a second stop).
func TestTriggeredFuturesExitIsNeverNotFoundWhileItsOrderQueryLags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	b.fake.SetPosition("BTCUSDT", d("0.01"))

	// Only the query by orderId (resolveTriggered's) lags; the algo query
	// and the fake's own paths are untouched.
	proxy := newLagProxy(t, b.fake.URL, func(q url.Values) bool { return q.Get("orderId") != "" })
	cfg := b.cfg
	cfg.BaseURL = proxy.srv.URL
	v, err := binance.New(cfg)
	require.NoError(t, err)

	sl := exchange.Order{ClientOrderID: newID(), Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.01"), Exit: exchange.RoleStopLoss,
		StopLoss: &exchange.Attached{Price: decimal.NewNullDecimal(d("49000"))}}
	r, err := v.Place(ctx, sl)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	// The stop triggers and its market order fills (the algo order is
	// FINISHED); the order query has not caught up with that order yet.
	b.fake.MovePrice("BTCUSDT", d("48800"))
	require.True(t, b.fake.Position("BTCUSDT").IsZero(), "the stop executed: the position is closed")
	proxy.lagging.Store(true)

	_, err = v.Lookup(ctx, sl)
	require.Error(t, err, "the triggered order's state is not known yet")
	require.NotErrorIs(t, err, exchange.ErrNotFound,
		"binance holds the algo order under %s (it executed): a lagging query of the order it became must not read as 'no such exit'", sl.ClientOrderID)

	// Once the query catches up, the same lookup records the fill.
	proxy.lagging.Store(false)
	r, err = v.Lookup(ctx, sl)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
}
