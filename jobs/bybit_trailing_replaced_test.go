package jobs_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// Bybit holds one trailing stop per position. A long with a 1 % trailing
// stop (600 at 60000) is added to by a second long of the same strategy
// with a 2 % trailing stop: hoox itself sets 1200 on the position, which
// replaces the first entry's 600 for good. The first exit's row is
// recorded expired at its next look (replaced), not kept open "for an
// operator" with a warning and a venue error at every look for the 80-day
// horizon, as a mismatch read it.
func TestBybitTrailingStopReplacedByHooxsNextEntryIsNotLeftOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := bybitfake.New(t, bybitfake.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)

	first, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"trail-a"}`))
	require.NoError(t, err)
	require.Len(t, first.Legs, 1)
	require.Equal(t, "open", first.Legs[0].Status)
	trailA := first.Legs[0].ClientOrderID

	second, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":2},"trace_id":"trail-b"}`))
	require.NoError(t, err)
	require.Len(t, second.Legs, 1)
	require.Equal(t, "open", second.Legs[0].Status)
	require.Equal(t, "1200", f.TrailingStop("BTCUSDT").String(), "the second entry's trailing stop replaced the first's")

	_, err = fb.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '1 hour' WHERE client_order_id = $1`, trailA)
	require.NoError(t, err)
	res, err := fb.work(t, fb.queuedFollowOf(t, trailA))
	require.NoError(t, err)
	row, err := db.GetOrder(ctx, fb.pool, trailA)
	require.NoError(t, err)
	require.NotEqualf(t, "open", row.Status,
		"the first entry's trailing stop, replaced by hoox's own second entry, is left open for an operator (job %s) and followed for 80 days", res.EventKind)
}
