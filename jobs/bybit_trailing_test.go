package jobs_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
)

// A Bybit limit long with a trailing stop of 1 % rests; nothing is set
// until its follow job records the fill. Bybit then refuses the trailing
// stop for want of a position (Bybit creates orders asynchronously: the
// fill may not show in the position yet) — not a refusal for good: the leg
// stays sent and undecided. Once the position shows without a trailing
// stop and the accept window has passed, the next pass sets it: once, at
// 590 (1 % of the 59000 fill), recorded open.
func TestBybitLimitEntryTrailingStopWaitsForThePositionThenIsSetOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := bybitfake.New(t, bybitfake.Options{}) // BTCUSDT at 60000, tick 0.10
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)
	gw := fb.gw

	out, err := gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"order_type":"limit","price":"59000","trailing_stop":{"percent":1},"trace_id":"bt-limit"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	require.Empty(t, out.Legs)

	require.True(t, f.PartialFill(bybitfake.CategoryLinear, out.Order.ClientOrderID, decimal.RequireFromString("0.01")))
	f.SetPosition("BTCUSDT", "", decimal.Zero) // the fill does not show in the position yet
	res, err := fb.work(t, fb.queuedFollow(t, "k:bt-limit"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the fill is recorded")
	require.Equal(t, 1, f.Requests(bybitfake.PathTradingStop), "tried once the fill was recorded")
	require.Zero(t, f.TrailingStopSets("BTCUSDT"))
	require.Equal(t, int64(1), count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:bt-limit' AND sent_at IS NOT NULL AND outcome IS NULL`),
		"refused without a position: undecided, not rejected")

	f.SetPosition("BTCUSDT", "Buy", decimal.RequireFromString("0.01")) // the position catches up
	var lockKey, parent string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id FROM order_legs WHERE trace_id = 'k:bt-limit'`).Scan(&lockKey, &parent))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.ErrorIs(t, err, jobs.ErrNotYet, "inside the accept window a late request may still land")
	require.Equal(t, 1, f.Requests(bybitfake.PathTradingStop))

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:bt-limit'`)
	require.NoError(t, err)
	legs, err := runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.Len(t, legs, 1)
	require.Equal(t, "open", legs[0].Status)
	require.Equal(t, "590", legs[0].TrailingDistance.Decimal.String(), "1 % of the limit's fill at 59000")
	require.Equal(t, "590", f.TrailingStop("BTCUSDT").String())
	require.Equal(t, 1, f.TrailingStopSets("BTCUSDT"), "set once")
}
