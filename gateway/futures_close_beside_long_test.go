package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// holdEntryAcrossClose orders a race of two signals of one symbol: once
// armed, the next BUY market order (a long's entry, its claim already
// begun) is held until a SELL order (the close) has been answered; the
// close's own look at the exits (GET /fapi/v1/openAlgoOrders?symbol=) is
// held until entryDone is closed (the long answered, its exits placed);
// the long's count of the account's algo orders before its intent (the
// same path without a symbol) is not.
type holdEntryAcrossClose struct {
	armed       *atomic.Bool
	entrySent   chan struct{}
	closeFilled chan struct{}
	entryDone   chan struct{}
	sentOnce    *sync.Once
	filledOnce  *sync.Once
}

func (h holdEntryAcrossClose) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.armed.Load() && r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/fapi/v1/order") {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		form, _ := url.ParseQuery(string(body))
		if form.Get("side") == "BUY" {
			h.sentOnce.Do(func() { close(h.entrySent) })
			select {
			case <-h.closeFilled:
			case <-time.After(8 * time.Second):
			}
			return http.DefaultTransport.RoundTrip(r)
		}
		resp, err := http.DefaultTransport.RoundTrip(r)
		h.filledOnce.Do(func() { close(h.closeFilled) })
		return resp, err
	}
	if h.armed.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/openAlgoOrders") && r.URL.Query().Get("symbol") != "" {
		select {
		case <-h.entryDone:
		case <-time.After(8 * time.Second):
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A strategy reverses: its long's signal (with a take-profit and a
// stop-loss) and a close of the whole position of another strategy (or
// its own earlier close alert) arrive together. The long is claimed
// first; the close reads the position (the old long only), the new long
// fills after that read, and the close sells only the old long. The
// close's own look sees the new long open and keeps its exits (created
// after the close began). Its work after the answer must keep them too:
// the new long's exit legs were planned in the long's claim transaction,
// whose now() is its start — before the close's intent — although its
// fill came after the close read the position.
func TestCloseKeepsTheExitsOfALongClaimedBeforeItButFilledAfterItsRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	h := holdEntryAcrossClose{armed: &atomic.Bool{}, entrySent: make(chan struct{}), closeFilled: make(chan struct{}),
		entryDone: make(chan struct{}), sentOnce: &sync.Once{}, filledOnce: &sync.Once{}}
	svc, _ := futuresVia(t, dbURL, pool, fake, h)

	first, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1","trace_id":"rc-long1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, first.Status)
	h.armed.Store(true)

	type result struct {
		out *gateway.Outcome
		err error
	}
	next := make(chan result, 1)
	go func() {
		out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
			"take_profit":"3300","stop_loss":"2900","trace_id":"rc-long2"}`))
		close(h.entryDone)
		next <- result{out, err}
	}()
	<-h.entrySent // the new long is claimed and on its way to Binance
	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"rc-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	res := <-next
	require.NoError(t, res.err)
	require.Equal(t, db.TraceDispatched, res.out.Status)
	require.Len(t, res.out.Legs, 2)
	svc.WaitBackground() // the close's exitsAfterClose

	require.Truef(t, decimal.NewFromInt(1).Equal(fake.Position("ETHUSDT")), "position %s: the close sold only the old long", fake.Position("ETHUSDT"))
	var legsPlanned, closeArmed time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(created_at) FROM order_legs WHERE trace_id = 'k:rc-long2'`).Scan(&legsPlanned))
	require.NoError(t, pool.QueryRow(ctx, `SELECT sent_at FROM dispatch_intents WHERE trace_id = 'k:rc-close'`).Scan(&closeArmed))
	t.Logf("new long's legs planned at %s; close's intent armed at %s", legsPlanned.Format(time.RFC3339Nano), closeArmed.Format(time.RFC3339Nano))
	resting := 0
	for _, a := range fake.AlgoOrders() {
		t.Logf("algo %s %s %s %s", a.ClientAlgoID, a.Side, a.Type, a.Status)
		if a.Status == "NEW" {
			resting++
		}
	}
	require.Equalf(t, 2, resting, "the new long (open, position %s) has %d of its 2 exits left at Binance: the close's second look cancelled them by ID",
		fake.Position("ETHUSDT"), resting)
}
