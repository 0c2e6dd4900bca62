package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// slowStopAfterListing holds one STOP_MARKET algo placement (an entry's
// stop-loss on its way): it runs hook once, waits until a GET
// /fapi/v1/openAlgoOrders (the close's own look at the exits) has been
// answered, then sends the stop on; Binance's answer to it comes only
// after slow (an algo placement answered slowly, well inside hoox's venue
// timeout).
type slowStopAfterListing struct {
	once   *sync.Once
	hook   func()
	listed chan struct{}
	mark   *sync.Once
	slow   time.Duration
}

func (s slowStopAfterListing) RoundTrip(r *http.Request) (*http.Response, error) {
	held := false
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fapi/v1/algoOrder") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if form, _ := url.ParseQuery(string(body)); form.Get("type") == "STOP_MARKET" {
			s.once.Do(func() {
				s.hook()
				select {
				case <-s.listed:
				case <-time.After(10 * time.Second):
				}
				held = true
			})
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if held {
		time.Sleep(s.slow)
	}
	if err == nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/openAlgoOrders") {
		s.mark.Do(func() { close(s.listed) })
	}
	return resp, err
}

// A Binance USDⓈ-M long with a take-profit and a stop-loss fills; while
// the stop-loss's request is on its way (Binance slow to answer it, 5 s,
// inside the 10 s venue timeout), the strategy's close of the whole long
// arrives and fills at once. Its webhook answer must not wait for the
// other entry's exit send (TradingView gives a webhook 3 s, DESIGN "Claim
// and dispatch"): the close is filled and recorded. Answered, the
// strategy sends its next long (no exits) at once, which fills before the
// stop-loss's send has ended. The stop-loss, booked after the close
// looked, is still the closed long's: once its send has ended it must be
// cancelled, not left to sell the next long.
func TestFuturesWholeCloseAnswerDoesNotWaitForAnExitSendOnItsWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	var svc *gateway.Service
	type result struct {
		out     *gateway.Outcome
		err     error
		elapsed time.Duration
		next    *gateway.Outcome
		nextErr error
	}
	closed := make(chan result, 1)
	rt := slowStopAfterListing{once: &sync.Once{}, mark: &sync.Once{}, listed: make(chan struct{}), slow: 5 * time.Second, hook: func() {
		go func() {
			start := time.Now()
			out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"slow-close"}`))
			res := result{out: out, err: err, elapsed: time.Since(start)}
			res.next, res.nextErr = svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"slow-next"}`))
			closed <- res
		}()
	}}
	svc, _ = futuresVia(t, dbURL, pool, fake, rt)

	entry, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2900","trace_id":"slow-long"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, entry.Status)
	res := <-closed
	require.NoError(t, res.err)
	require.Equal(t, db.TraceDispatched, res.out.Status)
	require.Lessf(t, res.elapsed, 3*time.Second,
		"the close filled at once but its answer took %s: it waited for the entry's stop-loss send before answering", res.elapsed)
	require.NoError(t, res.nextErr)
	require.Equal(t, db.TraceDispatched, res.next.Status)

	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	for _, a := range fake.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "after the close, the closed long's reduce-only %s %s %s still rests at Binance",
			a.Side, a.Type, a.ClientAlgoID)
	}
	fake.MovePrice("ETHUSDT", decimal.NewFromInt(2890))
	require.Truef(t, decimal.NewFromInt(1).Equal(fake.Position("ETHUSDT")),
		"the next long (no exits asked) was sold by the closed long's stop-loss: position now %s", fake.Position("ETHUSDT"))
}

// countAlgoRequests counts the close's looks at the exits: GET
// /fapi/v1/openAlgoOrders listings and DELETE /fapi/v1/algoOrder cancels.
type countAlgoRequests struct {
	mu       *sync.Mutex
	listings *int
	cancels  *int
}

func (c countAlgoRequests) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/openAlgoOrders"):
		*c.listings++
	case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/algoOrder"):
		*c.cancels++
	}
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// A Binance USDⓈ-M long with a take-profit and a stop-loss, both placed
// and answered, is closed whole. No exit send is on its way: the close's
// own look (Place) lists and cancels both, and that is all Binance should
// be asked. The second look (exitsAfterClose) is for an exit recorded
// open that the first look may have missed — not for the two it just
// cancelled, which are still recorded open until their follow jobs
// record the cancel; asking again after every close costs requests
// (weight) for nothing.
func TestFuturesWholeCloseWithNoExitInFlightLooksOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	listings, cancels, mu := 0, 0, &sync.Mutex{}
	count := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return listings, cancels
	}
	svc, _ := futuresVia(t, dbURL, pool, fake, countAlgoRequests{mu: mu, listings: &listings, cancels: &cancels})

	entry, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2900","trace_id":"once-long"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, entry.Status)
	require.Len(t, entry.Legs, 2)
	l0, c0 := count()
	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"once-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	require.True(t, fake.Position("ETHUSDT").IsZero())
	for _, a := range fake.AlgoOrders() {
		require.NotEqual(t, "NEW", a.Status)
	}
	l, c := count()
	require.Equalf(t, 1, l-l0, "a close with no exit send on its way listed the open algo orders %d times", l-l0)
	require.Equalf(t, 2, c-c0, "a close with no exit send on its way sent %d algo cancels for its 2 exits", c-c0)
}
