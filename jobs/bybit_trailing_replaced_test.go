package jobs_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
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
	f, v := bybitLinear(t) // BTCUSDT at 60000
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

// A Bybit long with a 1 % trailing stop (600 set on the position), then a
// second long of the same strategy with a 2 % trailing stop. The second
// leg's trading-stop request gets an HTTP 500 and was never applied (the
// position still trails by 600): its outcome is unknown, the leg stays
// sent. The next pass finds the position trailing by the FIRST entry's
// 600. No later leg of the position replaced the second's — it was never
// there — so it is not recorded expired as "replaced" (final, never sent
// again, the 2 % the user asked for never set): inside the accept window
// the pass waits, as for a setting not found, and after it sets the 2 %
// again.
func TestBybitTrailingStopNeverAppliedIsNotRecordedReplacedByTheOlderOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)

	first, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"r16-trail-a"}`))
	require.NoError(t, err)
	require.Len(t, first.Legs, 1)
	require.Equal(t, "open", first.Legs[0].Status)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())

	// The second trailing stop's request fails with a 500, not applied.
	f.Inject(bybitfake.PathTradingStop, 1, bybitfake.Fault{HTTPStatus: http.StatusInternalServerError})
	second, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":2},"trace_id":"r16-trail-b"}`))
	require.NoError(t, err)
	t.Logf("second entry %s, legs %+v", second.Order.Status, second.Legs)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "the second trailing stop was not applied")

	var lockKey, parent, legID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs WHERE trace_id = 'k:r16-trail-b'`).
		Scan(&lockKey, &parent, &legID))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)
	legs, err := runner.Finish(ctx, lockKey, parent)
	t.Logf("pass inside the accept window: legs %+v, err %v", legs, err)
	for _, l := range legs {
		require.NotEqualf(t, "expired", l.Status,
			"the second entry's trailing stop, never applied (the position trails by the first entry's %s), is recorded expired as 'replaced': never set",
			f.TrailingStop("BTCUSDT"))
	}

	// The clock moves on for both legs: the first entry's leg stays armed
	// before the second's (db.LaterSettingLeg reads that order).
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '10 minutes' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	legs, err = runner.Finish(ctx, lockKey, parent)
	t.Logf("pass after the accept window: legs %+v, err %v", legs, err)
	require.Equal(t, "1200", f.TrailingStop("BTCUSDT").String(), "the 2 %% trailing stop the second entry asked for is set")
	require.Len(t, legs, 1)
	require.Equal(t, "open", legs[0].Status, "recorded as the position's trailing stop")
}

// The same never-applied 2 % trailing stop, given up while Bybit's
// position list could not be read (failed, unknown). Once Bybit answers
// again the sweeper asks about it (AskUnknown) and finds the position
// trailing by the first entry's 600: no later leg replaced the second's,
// so it is opened again (a same-ID send is safe on Bybit) and the next
// pass sets the 2 % — not recorded expired as "replaced" by the older one.
func TestBybitTrailingStopGivenUpIsReopenedNotRecordedReplacedByTheOlderOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000
	var err error
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)

	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"trail-given-a"}`))
	require.NoError(t, err)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())
	f.Inject(bybitfake.PathTradingStop, 1, bybitfake.Fault{HTTPStatus: http.StatusInternalServerError})
	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":2},"trace_id":"trail-given-b"}`))
	require.NoError(t, err)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "the second trailing stop was not applied")
	var lockKey, parent, legID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs WHERE trace_id = 'k:trail-given-b'`).
		Scan(&lockKey, &parent, &legID))

	// Two hours pass (for both legs) with the position list failing: the
	// pass gives the leg up, its trailing stop unknown.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '2 hours' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	f.Inject(bybitfake.PathPositions, 100, bybitfake.Fault{HTTPStatus: http.StatusInternalServerError})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{SweepGiveUp: time.Hour}, venues, nil, nil).Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, legID))
	f.ClearFaults()

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = now() - interval '1 hour' WHERE outcome = 'failed'`)
	require.NoError(t, err)
	unknown, err := db.ListUnknownLegs(ctx, b.pool, time.Minute, 10)
	require.NoError(t, err)
	require.Len(t, unknown, 1)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: venues})
	require.NoError(t, err)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{SweepGiveUp: time.Hour}, venues, nil, nil).QueueFollowsWith(client)
	_, err = runner.AskUnknown(ctx, unknown[0])
	require.NoError(t, err)
	require.EqualValues(t, 0, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'expired'`, legID),
		"the never-applied trailing stop is recorded expired, replaced by the older one it never replaced")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome IS NULL`, legID),
		"not at the position, nothing later replaced it: open again, for the next pass to set")

	legs, err := runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.Equal(t, "1200", f.TrailingStop("BTCUSDT").String(), "the 2 %% trailing stop the second entry asked for is set")
	require.Len(t, legs, 1)
	require.Equal(t, "open", legs[0].Status)
}

// The other way round: the first long's 1 % trailing stop gets an HTTP 500
// (never applied, outcome unknown), then the second long sets its 2 %
// (1200). The first leg's pass finds 1200 on the position, and a later
// leg of the position (the second's) was armed after the first was sent:
// the first was replaced for good. It is recorded expired naming the
// second — and never sent again, which would set the older 600 over the
// trailing stop the strategy asked for last — but not while its own
// request could still take effect (its accept window).
func TestBybitTrailingStopUnknownThenReplacedByALaterEntryIsRecordedReplacedAfterItsWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000
	var err error
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)

	f.Inject(bybitfake.PathTradingStop, 1, bybitfake.Fault{HTTPStatus: http.StatusInternalServerError})
	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"trail-unk-a"}`))
	require.NoError(t, err)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "the first trailing stop was not applied")
	second, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":2},"trace_id":"trail-unk-b"}`))
	require.NoError(t, err)
	require.Len(t, second.Legs, 1)
	require.Equal(t, "open", second.Legs[0].Status)
	trailB := second.Legs[0].ClientOrderID
	require.Equal(t, "1200", f.TrailingStop("BTCUSDT").String())

	var lockKey, parent, trailA string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs WHERE trace_id = 'k:trail-unk-a'`).
		Scan(&lockKey, &parent, &trailA))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.ErrorIs(t, err, jobs.ErrNotYet, "inside its accept window the first request may still take effect")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, trailA),
		"recorded replaced while its own request could still land")

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '10 minutes' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	legs, err := runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.Len(t, legs, 1)
	require.Equal(t, "expired", legs[0].Status)
	require.NotNil(t, legs[0].RejectReason)
	require.Contains(t, *legs[0].RejectReason, "replaced by the later trailing stop "+trailB)
	require.Equal(t, "1200", f.TrailingStop("BTCUSDT").String(), "the older trailing stop is not set over the later one")
}
