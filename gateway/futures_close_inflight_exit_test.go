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
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// stopHeldUntilListed holds a STOP_MARKET algo placement (an entry's
// stop-loss on its way to Binance) before it reaches Binance: it runs
// hook once, then waits until a GET /fapi/v1/openAlgoOrders (a close's
// listing of the exits to cancel) has been answered, then sends the stop
// on.
type stopHeldUntilListed struct {
	once   *sync.Once
	hook   func()
	listed chan struct{}
	mark   *sync.Once
}

func (s stopHeldUntilListed) RoundTrip(r *http.Request) (*http.Response, error) {
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
			})
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/openAlgoOrders") {
		s.mark.Do(func() { close(s.listed) })
	}
	return resp, err
}

// A Binance USDⓈ-M long with a take-profit and a stop-loss fills; hoox
// places the take-profit, and while the stop-loss's request is on its way
// the strategy's close of the whole long (another request) fills and
// lists the exits to cancel: the take-profit is there, the stop-loss not
// yet. The stop-loss then lands at Binance, a reduce-only SELL on a flat
// position. A cancel signal marks such an exit (armed, its order not
// known yet) and cancels it once its send is over; the close must leave
// it no more resting than the take-profit, or it sells the symbol's next
// long.
func TestFuturesWholeCloseCancelsAnExitWhoseSendWasOnItsWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	var svc *gateway.Service
	closed := make(chan error, 1)
	var closeOut *gateway.Outcome
	rt := stopHeldUntilListed{once: &sync.Once{}, mark: &sync.Once{}, listed: make(chan struct{}), hook: func() {
		go func() {
			out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"inflight-close"}`))
			closeOut = out
			closed <- err
		}()
	}}
	svc, _ = futuresVia(t, dbURL, pool, fake, rt)

	entry, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2900","trace_id":"inflight-long"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, entry.Status)
	require.NoError(t, <-closed)
	require.Equal(t, db.TraceDispatched, closeOut.Status)
	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	require.True(t, fake.Position("ETHUSDT").IsZero(), "the close flattened the long")

	for _, a := range fake.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "after the close flattened the long, its reduce-only %s %s %s still rests at Binance",
			a.Side, a.Type, a.ClientAlgoID)
	}
	next, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"inflight-next"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)
	fake.MovePrice("ETHUSDT", decimal.NewFromInt(2890))
	require.Truef(t, decimal.NewFromInt(1).Equal(fake.Position("ETHUSDT")),
		"the new long (no exits asked) was sold by the closed long's stop-loss: position now %s", fake.Position("ETHUSDT"))
}

// loseStopRequest answers one STOP_MARKET algo placement with a bare 502
// without sending it on: a proxy that gave up before Binance saw it. The
// stop-loss's leg is armed, its order unknown.
type loseStopRequest struct {
	once *sync.Once
}

func (l loseStopRequest) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fapi/v1/algoOrder") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		lose := false
		if form, _ := url.ParseQuery(string(body)); form.Get("type") == "STOP_MARKET" {
			l.once.Do(func() { lose = true })
		}
		if lose {
			return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{}, Request: r,
				Body: io.NopCloser(strings.NewReader("Bad Gateway"))}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A Binance USDⓈ-M long with a take-profit and a stop-loss fills; the
// stop-loss's request gets no answer (its leg is armed, its order
// unknown). The strategy closes the whole long, then opens the next one
// without exits. The leg runner, past the stop's accept window, finds no
// stop at Binance: a cancel signal's mark would stop it from sending it
// again, and so must the close that left the position it protected
// gone — sent now, it would rest on the new long that asked for none.
func TestFuturesWholeCloseStopsAnUnknownExitFromBeingSentAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	svc, venue := futuresVia(t, dbURL, pool, fake, loseStopRequest{once: &sync.Once{}})

	entry, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3300","stop_loss":"2900","trace_id":"unknown-sl-long"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, entry.Status)
	var lockKey, slID string
	require.NoError(t, pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
		WHERE parent_client_order_id = $1 AND role = 'stop_loss' AND outcome IS NULL AND sent_at IS NOT NULL`,
		entry.Order.ClientOrderID).Scan(&lockKey, &slID))

	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"unknown-sl-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.True(t, fake.Position("ETHUSDT").IsZero())
	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	next, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"unknown-sl-next"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, next.Status)

	// Past the stop's accept window, the leg runner resolves it.
	_, err = pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '1 minute' WHERE client_order_id = $1`, slID)
	require.NoError(t, err)
	_, _ = jobs.NewLegRunner(pool, nil, jobs.Config{}, exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: venue}), nil, nil).Finish(ctx, lockKey, entry.Order.ClientOrderID)
	for _, a := range fake.AlgoOrders() {
		require.Falsef(t, a.ClientAlgoID == slID && a.Status == "NEW",
			"the closed long's stop-loss was sent after the close and rests on the new long (no exits asked): %s %s of %s",
			a.Side, a.Type, a.Quantity)
	}
	fake.MovePrice("ETHUSDT", decimal.NewFromInt(2890))
	require.Truef(t, decimal.NewFromInt(1).Equal(fake.Position("ETHUSDT")),
		"the new long was sold by the closed long's stop-loss: position now %s", fake.Position("ETHUSDT"))
}

// entryBesideClose runs hook once, right before the first reduce-only
// POST /fapi/v1/order (a close) reaches Binance, and answers the first
// STOP_MARKET algo placement after that with a bare 502 without sending
// it on.
type entryBesideClose struct {
	mu     *sync.Mutex
	hooked *bool
	lost   *bool
	hook   func()
}

func (e entryBesideClose) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		form, _ := url.ParseQuery(string(body))
		e.mu.Lock()
		run := strings.HasSuffix(r.URL.Path, "/fapi/v1/order") && form.Get("reduceOnly") == "true" && !*e.hooked
		lose := strings.HasSuffix(r.URL.Path, "/fapi/v1/algoOrder") && form.Get("type") == "STOP_MARKET" && *e.hooked && !*e.lost
		*e.hooked = *e.hooked || run
		*e.lost = *e.lost || lose
		e.mu.Unlock()
		if run {
			e.hook()
		}
		if lose {
			return &http.Response{StatusCode: http.StatusBadGateway, Header: http.Header{}, Request: r,
				Body: io.NopCloser(strings.NewReader("Bad Gateway"))}, nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A close of the whole long reads the position (1) and, before its sell
// reaches Binance, the strategy's next long of 1 fills beside it, with a
// take-profit and a stop-loss whose request gets no answer (its leg armed,
// its order unknown). The close sells the old 1 and leaves the new long
// open. The new long's stop-loss is not the closed position's: it is not
// marked ended by the close, and the leg runner sends it again once its
// accept window has passed, on a venue that proves a missing exit absent
// — the new long keeps the protection it asked for.
func TestFuturesWholeCloseLeavesTheUnknownStopLossOfALongBesideItToBeSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	var svc *gateway.Service
	var beside *gateway.Outcome
	hooked, lost := false, false
	rt := entryBesideClose{mu: &sync.Mutex{}, hooked: &hooked, lost: &lost, hook: func() {
		out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
			"take_profit":"3300","stop_loss":"2900","trace_id":"beside-long"}`))
		require.NoError(t, err)
		beside = out
	}}
	var venue *binance.Venue
	svc, venue = futuresVia(t, dbURL, pool, fake, rt)

	old, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3400","trace_id":"beside-old"}`))
	require.NoError(t, err)
	require.Len(t, old.Legs, 1)

	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"beside-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.NotNil(t, beside)
	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	require.Equal(t, "1", fake.Position("ETHUSDT").String(), "the close sold the old long; the new one is open")
	var lockKey, slID, markedBy string
	require.NoError(t, pool.QueryRow(ctx, `SELECT lock_key, client_order_id, coalesce(cancelled_by, '') FROM order_legs
		WHERE parent_client_order_id = $1 AND role = 'stop_loss'`, beside.Order.ClientOrderID).Scan(&lockKey, &slID, &markedBy))
	require.Empty(t, markedBy, "the close marked the stop-loss of the long opened beside it")

	_, err = pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '1 minute' WHERE client_order_id = $1`, slID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE orders SET updated_at = updated_at - interval '1 minute' WHERE client_order_id = $1`, beside.Order.ClientOrderID)
	require.NoError(t, err)
	// Binance proves no algo order absent (Venue.RefusesLateRequest), so
	// the runner would fail the lost stop-loss for an operator rather than
	// send it again; a venue that would resend it (refusesLateExits) shows
	// what this test is about: nothing stops the resend.
	resending := exchange.NewRegistryOf(exchange.Entry{Name: "binance-futures", Live: refusesLateExits{venue}})
	_, err = jobs.NewLegRunner(pool, nil, jobs.Config{}, resending, nil, nil).Finish(ctx, lockKey, beside.Order.ClientOrderID)
	require.NoError(t, err)
	status := map[string]string{}
	for _, a := range fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, "NEW", status[slID], "the new long's stop-loss, sent again, protects it")
	require.Equal(t, "CANCELED", status[old.Legs[0].ClientOrderID], "the closed long's take-profit is cancelled")
}

// refusesLateExits is a Binance USDⓈ-M venue taken to refuse a late algo
// order as its matching engine refuses a late plain order (-5028), so an
// exit missing past its accept window is sent again under its ID. Binance
// documents no such refusal for its Algo Order API
// (binance.Venue.RefusesLateRequest).
type refusesLateExits struct{ *binance.Venue }

func (refusesLateExits) RefusesLateRequest(exchange.Order) bool { return true }
