package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// cutOffTransport runs hook once, before the first positionRisk read made
// while armed (the close's sizing read), and, once hold is set, holds
// every algo order POST until the close's listing of its symbol's open
// algo orders has been answered.
type cutOffTransport struct {
	armed, hold *atomic.Bool
	hook        func()
	held        chan struct{}
	heldOnce    *sync.Once
	listed      chan struct{}
	listedOnce  *sync.Once
}

func (c cutOffTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Path == "/fapi/v2/positionRisk" && c.armed.CompareAndSwap(true, false) {
		c.hook()
	}
	if r.Method == http.MethodPost && r.URL.Path == "/fapi/v1/algoOrder" && c.hold.Load() {
		c.heldOnce.Do(func() { close(c.held) })
		select {
		case <-c.listed:
		case <-time.After(20 * time.Second):
		}
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.Method == http.MethodGet && r.URL.Path == "/fapi/v1/openAlgoOrders" && r.URL.Query().Get("symbol") != "" && c.hold.Load() {
		c.listedOnce.Do(func() { close(c.listed) })
	}
	return resp, err
}

// Path: gateway exitsAfterClose → db.MarkClosedExitLegs, closeCutOffSQL
// for a Partial close (the close's orders.created_at, its claim's start).
// An exit leg's created_at is when its entry's FILL WAS RECORDED
// (migration 00045), not when the entry filled at the venue. A long (L2,
// take-profit and stop-loss) fills and is recorded after the "100%"
// close's claim began but before the close's sizing read, so the close
// sizes and sells it too (2 ETH: flat). L2's exits' send is on its way
// while the close lists the algo orders (not in the listing), and lands
// after. The catch is what exists for exactly that exit (fix-closeexits,
// fix-adoptedcloses), but L2's legs were planned after the close's claim
// start, so they are taken for an entry beside the close and left: L2's
// SELL take-profit and stop-loss rest on a flat position, to sell the
// symbol's next long. With the intent's sent_at (before 7ccc1e8) as the
// cut-off they were caught (seen: this test passes with closeCutOffSQL
// reverted to sent_at).
func TestHundredPercentCloseCatchesTheExitsOfALongRecordedDuringItsClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	var svc *gateway.Service
	var armed, hold atomic.Bool
	var l2 *gateway.Outcome
	l2done := make(chan struct{})
	tr := cutOffTransport{armed: &armed, hold: &hold, held: make(chan struct{}), heldOnce: &sync.Once{},
		listed: make(chan struct{}), listedOnce: &sync.Once{}}
	tr.hook = func() {
		hold.Store(true)
		go func() {
			defer close(l2done)
			out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
				"take_profit":"3300","stop_loss":"2900","trace_id":"cutoff-l2"}`))
			if err == nil {
				l2 = out
			}
		}()
		select { // L2 filled, recorded, its first exit's send on its way
		case <-tr.held:
		case <-time.After(20 * time.Second):
		}
	}
	svc, _ = futuresVia(t, dbURL, pool, fake, tr)

	l1, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3400","trace_id":"cutoff-l1"}`))
	require.NoError(t, err)
	require.Len(t, l1.Legs, 1)

	armed.Store(true)
	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"cutoff-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	<-l2done
	svc.WaitBackground()
	require.NotNil(t, l2)
	require.True(t, fake.Position("ETHUSDT").IsZero(), "the close sold both longs: flat")

	status := map[string]string{}
	for _, a := range fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, "CANCELED", status[l1.Legs[0].ClientOrderID], "L1's take-profit")
	for _, l := range l2.Legs {
		require.NotEqualf(t, "NEW", status[l.ClientOrderID], "L2's %s (%s) rests on the flat position the close left", l.Role, l.ClientOrderID)
	}
}
