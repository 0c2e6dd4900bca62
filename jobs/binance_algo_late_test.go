package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// A Binance USDⓈ-M stop-loss whose placement answer was lost (-1007,
// "execution status unknown") and whose position a close then flattened
// is not settled "never placed" once its accept window has passed: the
// matching engine's late-request refusal (-5028) covers the plain order
// endpoints only (derivatives change log, 2023-04-17), not the Algo
// Order API, so the Algo Service may still book the stop. When it does,
// hoox finds it and cancels it — a reduce-only stop left resting
// unrecorded would close the next long when the price falls to it.
func TestLostFuturesStopBookedAfterItsPositionClosedIsCancelledWhenItTurnsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, venues, fb := futuresFollowing(t) // ETHUSDT at 3000
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)

	f.InjectAlgo(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	_, _ = fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"stop_loss":"2700","trace_id":"algo-late"}`))
	require.Equal(t, "1", f.Position("ETHUSDT").String())
	var lockKey, parent, stopID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs
		WHERE trace_id = 'k:algo-late' AND role = 'stop_loss'`).Scan(&lockKey, &parent, &stopID))
	require.Empty(t, f.AlgoOrders(), "the stop's request is still on its way to the Algo Service")

	// The strategy closes the position.
	_, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"algo-late-close"}`))
	require.NoError(t, err)
	require.True(t, f.Position("ETHUSDT").IsZero(), "the close flattened the position")

	// Past the stop's accept window (and the position read's lag after
	// the entry's fill), Binance does not show the stop yet.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE client_order_id = $1`, stopID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '10 minutes', updated_at = updated_at - interval '10 minutes'
		WHERE trace_id IN ('k:algo-late', 'k:algo-late-close')`)
	require.NoError(t, err)
	_, _ = runner.Finish(ctx, lockKey, parent)

	// The Algo Service books the stop; the sweeper runs for a while.
	f.Advance(2 * time.Hour)
	resting := func() bool {
		for _, a := range f.AlgoOrders() {
			if a.ClientAlgoID == stopID && a.Status == "NEW" {
				return true
			}
		}
		return false
	}
	require.True(t, resting(), "Binance booked the stop late")
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, venues, nil, nil)
	sweeps := sweepUntil(t, b.pool, sweeper, func() bool { return !resting() })
	require.False(t, resting(), "a stop of a closed position that Binance booked late must not be left resting, unknown to hoox: it would close the next long (%d sweeps)", sweeps)
}
