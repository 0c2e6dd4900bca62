package gateway_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// afterPositionRead runs hook once, after the answer to the first
// positionRisk read made while armed.
type afterPositionRead struct {
	armed *atomic.Bool
	hook  func()
}

func (a afterPositionRead) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if r.Method == http.MethodGet && r.URL.Path == "/fapi/v2/positionRisk" && a.armed.CompareAndSwap(true, false) {
		a.hook()
	}
	return resp, err
}

// A "100%" close of a long is sized from the position read before its
// intent (1 ETH). Right after that read another long of 1 fills with its
// take-profit and stop-loss, placed and recorded open before the close is
// sent. The close sells the 1 it was sized for and executes in full: the
// old long's take-profit goes (created before the close's read), the new
// long's exits stay (created after it) — Place's own start, later than
// the new long's exits, is not the cut-off (review of fix-adoptedcloses).
func TestFuturesHundredPercentCloseKeepsTheExitsOfALongThatFilledAfterItsSizing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	var svc *gateway.Service
	var armed atomic.Bool
	var beside *gateway.Outcome
	rt := afterPositionRead{armed: &armed, hook: func() {
		out, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
			"take_profit":"3300","stop_loss":"2900","trace_id":"share-beside-new"}`))
		require.NoError(t, err)
		beside = out
		svc.WaitBackground()
	}}
	svc, _ = futuresVia(t, dbURL, pool, fake, rt)

	old, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"take_profit":"3400","trace_id":"share-beside-old"}`))
	require.NoError(t, err)
	require.Len(t, old.Legs, 1)

	armed.Store(true)
	cl, err := svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"share-beside-close"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, cl.Status)
	require.NotNil(t, beside)
	require.Len(t, beside.Legs, 2)
	svc.WaitBackground()
	require.Equal(t, "1", fake.Position("ETHUSDT").String(), "the close sold the old long; the new one is open")

	status := map[string]string{}
	for _, a := range fake.AlgoOrders() {
		status[a.ClientAlgoID] = a.Status
	}
	require.Equal(t, "CANCELED", status[old.Legs[0].ClientOrderID], "the closed long's take-profit is cancelled")
	for _, l := range beside.Legs {
		require.Equalf(t, "NEW", status[l.ClientOrderID], "the open long's %s", l.Role)
	}
}
