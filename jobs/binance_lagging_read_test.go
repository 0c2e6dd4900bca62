package jobs_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify/notifyfake"
)

// orderQueryLag stands in front of a fake Binance: while lagging is set, the
// USDⓈ-M order query by orderId (GET /fapi/v1/order?orderId=) answers
// -2013 "Order does not exist." — the query trailing the matching engine
// by a moment after a stop triggered, as the adapter assumes Binance's
// order query may (AcceptWindow's LookupLag). Everything else reaches the
// fake unchanged.
type orderQueryLag struct {
	lagging atomic.Bool
	// loseStops, while set, forwards a STOP_MARKET algo placement to the
	// fake and then answers a bare 502 (a proxy giving up after the
	// request was written): the stop exists, its answer is lost.
	loseStops atomic.Bool
	url       string
}

func newOrderQueryLag(t *testing.T, target string) *orderQueryLag {
	t.Helper()
	p := &orderQueryLag{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.lagging.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/fapi/v1/order") && r.URL.Query().Get("orderId") != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"code":-2013,"msg":"Order does not exist."}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		lose := p.loseStops.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fapi/v1/algoOrder") && form.Get("type") == "STOP_MARKET"
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
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
		if lose {
			_, _ = io.Copy(io.Discard, resp.Body)
			http.Error(w, "Bad Gateway", http.StatusBadGateway)
			return
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// A Binance USDⓈ-M stop-loss that triggered and filled, looked at by its
// follow job while the order query has not caught up with the order the
// stop became, is not recorded expired ("the venue no longer holds the
// exit"), which would end its follow with the fill unrecorded and the
// take-profit beside it resting on a closed position: a look once the
// query has caught up sees the fill and cancels the take-profit.
func TestTriggeredStopSeenWhileTheOrderQueryLagsIsNotRecordedExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	f.SetSpotCommission(decimal.Zero)
	lag := newOrderQueryLag(t, f.URL)
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: lag.url})
	require.NoError(t, err)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v})
	cfg := notifyfake.New(t).Config()
	cfg.Events = nil
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	eb := &exitsBundle{followBundle: followOn(t, b, b.venues, notifier), fake: f}

	out, err := eb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-lag"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 2)
	tp, sl := out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID
	require.Equal(t, exchange.RoleStopLoss, out.Legs[1].Role)
	// The exits have rested a while (past the accept window).
	_, err = eb.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '1 hour' WHERE trace_id = 'k:fut-lag'`)
	require.NoError(t, err)

	// The price falls through the stop: its market order fills and closes
	// the position; the order query has not caught up with that order.
	f.MovePrice("ETHUSDT", decimal.NewFromInt(2690))
	require.True(t, f.Position("ETHUSDT").IsZero(), "the stop-loss closed the position")
	lag.lagging.Store(true)
	slJob := eb.queuedFollowOf(t, sl)
	_, err = eb.work(t, slJob)
	require.NoError(t, err)
	require.NotEqual(t, "expired", eb.row(t, sl).Status,
		"the stop-loss executed at Binance; a lagging query of its triggered order must not record it gone")

	// The query catches up: the next look records the fill and cancels the
	// take-profit.
	lag.lagging.Store(false)
	res, err := eb.work(t, slJob)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, "filled", eb.row(t, sl).Status)
	for _, a := range f.AlgoOrders() {
		if a.ClientAlgoID == tp {
			require.Equal(t, "CANCELED", a.Status, "the take-profit of a closed position must not keep resting at Binance")
		}
	}
}

// A Binance USDⓈ-M stop-loss leg whose placement answer was lost (a
// proxy's 502: unknown) triggers and fills; the price bounces. The leg
// runner, past the accept window, looks the stop up while the order query
// trails the order the stop became: a Lookup answering
// exchange.ErrNotFound for it, read as "never placed"
// at a venue that refuses late requests, must not send the stop again
// under the same clientAlgoId (Binance takes it again, the first no
// longer being open: two stops for one signal).
func TestLostStopThatTriggeredIsNotSentAgainWhileTheOrderQueryLags(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	lag := newOrderQueryLag(t, f.URL)
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: lag.url})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v})
	b.venues = venues
	fb := followOn(t, b, venues, nil)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)

	lag.loseStops.Store(true)
	_, _ = fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"fut-lost-stop"}`))
	lag.loseStops.Store(false)
	var lockKey, parent, stopID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs
		WHERE trace_id = 'k:fut-lost-stop' AND role = 'stop_loss'`).Scan(&lockKey, &parent, &stopID))
	stops := func() int {
		n := 0
		for _, a := range f.AlgoOrders() {
			if a.ClientAlgoID == stopID {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, stops(), "the stop's answer was lost, but Binance booked it")

	// The price falls through the stop (it fills and closes the position)
	// and bounces; the order query has not caught up with the stop's order.
	f.MovePrice("ETHUSDT", decimal.NewFromInt(2690))
	require.True(t, f.Position("ETHUSDT").IsZero(), "the stop-loss closed the position")
	f.MovePrice("ETHUSDT", decimal.NewFromInt(2750))
	lag.lagging.Store(true)
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '1 minute' WHERE client_order_id = $1`, stopID)
	require.NoError(t, err)
	_, _ = runner.Finish(ctx, lockKey, parent)

	require.Equal(t, 1, stops(), "binance holds the stop under %s (it executed): it must not be sent again", stopID)
}
