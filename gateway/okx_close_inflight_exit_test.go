package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// okxTrailHeld holds a move_order_stop placement (an entry's trailing
// stop on its way to OKX) before it reaches OKX: it runs hook once and
// sends the stop on when hook returns.
type okxTrailHeld struct {
	once *sync.Once
	hook func()
}

func (s okxTrailHeld) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.URL.Path == okxfake.PathAlgo {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		if strings.Contains(string(body), "move_order_stop") {
			s.once.Do(s.hook)
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

// An okx-swap long with a trailing stop fills; while the trailing stop's
// request is on its way, the strategy's close of the whole long fills
// (its listing of the exits to cancel does not see the stop) and the
// strategy's next long, without exits, fills too. The stop then lands at
// OKX: a reduce-only SELL that reduces the new long, which it sells once
// the price comes back by its callback — an order nobody asked for. (On a
// flat position OKX would refuse it, 51169; the next long is what lets it
// rest.) As on Binance USDⓈ-M, the close must catch it once its send is
// over: it protected the position the close closed.
func TestOKXSwapWholeCloseCancelsATrailingStopWhoseSendWasOnItsWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	fake := okxfake.New(t, okxfake.Options{})
	const inst = "BTC-USDT-SWAP"
	var svc *gateway.Service
	var closeOut, nextOut *gateway.Outcome
	var closeErr, nextErr error
	rt := okxTrailHeld{once: &sync.Once{}, hook: func() {
		closeOut, closeErr = svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"okx-inflight-close"}`))
		nextOut, nextErr = svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03","trace_id":"okx-inflight-next"}`))
	}}
	venue, err := okx.New(okx.Config{Market: okx.MarketSwap, APIKey: fake.APIKey(), APISecret: fake.APISecret(), Passphrase: fake.Passphrase(),
		BaseURL: fake.URL, HTTPClient: &http.Client{Transport: rt}})
	require.NoError(t, err)
	reg := exchange.NewRegistryOf(exchange.Entry{Name: "okx-swap", Live: venue})
	svc = gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, dbURL), Venues: reg})
	t.Cleanup(svc.Close)

	entry, err := svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-inflight-long"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, entry.Status)
	require.NoError(t, closeErr)
	require.Equal(t, db.TraceDispatched, closeOut.Status)
	require.NoError(t, nextErr)
	require.Equal(t, db.TraceDispatched, nextOut.Status)
	svc.WaitBackground() // the close's exitsAfterClose, after its answer
	require.True(t, decimal.NewFromInt(3).Equal(fake.Position(inst)), "the next long is open")

	stops := fake.TrailingStops()
	require.Len(t, stops, 1, "the closed long's trailing stop reached OKX")
	require.NotEqualf(t, "live", stops[0].State, "the closed long's reduce-only %s %s still rests at OKX on the next long",
		stops[0].Side, stops[0].OrdType)
	_ = fake.TriggerAlgo(stops[0].AlgoClOrdID)
	require.Truef(t, decimal.NewFromInt(3).Equal(fake.Position(inst)),
		"the new long (no exits asked) was sold by the closed long's trailing stop: position now %s contracts", fake.Position(inst))
}
