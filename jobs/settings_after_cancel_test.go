package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
)

// bybitLinear is a Bybit linear venue on a fake of its own (BTCUSDT at
// 60000), on a transport closed at the test's end.
func bybitLinear(t *testing.T) (*bybitfake.Server, *bybit.Venue) {
	t.Helper()
	f := bybitfake.New(t, bybitfake.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	return f, v
}

// loseTrailing loses, while lose is set, every Bybit trailing stop's send
// as an answer that never came (a read timeout): before it reaches Bybit,
// or, with applied, after Bybit set it. The leg stays armed, its outcome
// unknown.
type loseTrailing struct {
	*bybit.Venue
	lose    *atomic.Bool
	applied bool
	// beforeLookup, when set, runs before each trailing stop's lookup.
	beforeLookup func(o exchange.Order)
}

func (v loseTrailing) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop && v.beforeLookup != nil {
		v.beforeLookup(o)
	}
	return v.Venue.Lookup(ctx, o)
}

func (v loseTrailing) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.Exit == exchange.RoleTrailingStop && v.lose.Load() {
		if v.applied {
			if _, err := v.Venue.Place(ctx, o); err != nil {
				return exchange.Report{}, err
			}
		}
		return exchange.Report{}, fmt.Errorf("drill: answer lost: %w", exchange.ErrUnknownOutcome)
	}
	return v.Venue.Place(ctx, o)
}

// A Bybit long E1 with a trailing stop at a distance of 600 fills; the
// trailing stop's send gets no answer (it never took effect), so its leg L1 is armed and
// unrecorded. The trader's cancel marks L1 (MarkCancelledExitLegs): never
// sent again, cancelled at the venue if found. Before the sweeper's next
// pass the strategy enters again (E2, same template: a trailing stop at a
// distance of 600), and E2's trailing stop is set and recorded
// open. A Bybit trailing stop is the position's setting, found by its
// distance only (lookupTrailing): the pass on L1 "finds" E2's trailing
// stop, and cancelFound clears it at Bybit. E2's position is left without
// the trailing stop the strategy asked for, while hoox records it open.
func TestMarkedBybitTrailingStopDoesNotCancelALaterEntrysTrailingStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, raw := bybitLinear(t) // BTCUSDT at 60000
	lose := &atomic.Bool{}
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": loseTrailing{Venue: raw, lose: lose}})
	fb := followOn(t, b, venues, nil)

	lose.Store(true)
	e1, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"rv-trail-e1"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", e1.Order.Status)
	lose.Store(false)
	f.SetPosition("BTCUSDT", "Buy", decimal.RequireFromString("0.01"))
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "E1's trailing stop never took effect")
	var lockKey1, l1 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e1.Order.ClientOrderID).Scan(&lockKey1, &l1))

	// The trader cancels: L1 may have been sent, so it is marked.
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"rv-trail-c"}`))
	require.NoError(t, err)
	var detail, legState string
	_ = b.pool.QueryRow(ctx, `SELECT detail::text FROM trace_events WHERE trace_id = $1 AND event = 'cancelled'`, cl.TraceID).Scan(&detail)
	_ = b.pool.QueryRow(ctx, `SELECT concat_ws(' ', coalesce(outcome, '-'), sent_at IS NOT NULL, coalesce(cancelled_by, '-')) FROM order_legs WHERE client_order_id = $1`, l1).Scan(&legState)
	t.Logf("cancel %s: %s; L1 %s", cl.TraceID, detail, legState)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND cancelled_by = $2`, l1, cl.TraceID))

	// The strategy enters again; its trailing stop is set and recorded open.
	e2, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"rv-trail-e2"}`))
	require.NoError(t, err)
	require.Len(t, e2.Legs, 1)
	require.Equal(t, "open", e2.Legs[0].Status)
	f.SetPosition("BTCUSDT", "Buy", decimal.RequireFromString("0.02"))
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "E2's trailing stop is set")

	// The sweeper's pass on E1's legs, past the accept window.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE client_order_id = $1`, l1)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey1, e1.Order.ClientOrderID)
	t.Logf("pass on E1's legs: %v", err)
	var l1Status string
	_ = b.pool.QueryRow(ctx, `SELECT status FROM orders WHERE client_order_id = $1`, l1).Scan(&l1Status)
	t.Logf("L1 recorded: %q", l1Status)

	require.Equalf(t, "600", f.TrailingStop("BTCUSDT").String(),
		"E2's trailing stop (recorded %s) was cleared at Bybit by the pass on E1's marked trailing stop %s (recorded %q): the position is unprotected",
		e2.Legs[0].Status, l1, l1Status)
}

// The same, later: the pass on E1's marked trailing stop L1 finds the
// position without a trailing stop past L1's accept window. The code
// before failed L1 as unknown (never sent again) and asked about it at
// every sweep grace, for ever (AskUnknown): whenever the strategy's next
// entry set a trailing stop of the same distance on the symbol — minutes
// or weeks later — the next ask "found" it as L1 and cleared it at Bybit.
// Now the pass settles L1 (not_placed: never looked up again), and a leg
// the code before left failed and marked is settled by the next ask
// without clearing anything.
func TestUnknownMarkedBybitTrailingStopDoesNotCancelALaterEntrysTrailingStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, raw := bybitLinear(t) // BTCUSDT at 60000
	lose := &atomic.Bool{}
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": loseTrailing{Venue: raw, lose: lose}})
	fb := followOn(t, b, venues, nil)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: venues})
	require.NoError(t, err)

	lose.Store(true)
	e1, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"rv-trail2-e1"}`))
	require.NoError(t, err)
	lose.Store(false)
	f.SetPosition("BTCUSDT", "Buy", decimal.RequireFromString("0.01"))
	var lockKey1, l1 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e1.Order.ClientOrderID).Scan(&lockKey1, &l1))

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"rv-trail2-c"}`))
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND cancelled_by = $2`, l1, cl.TraceID))

	// The sweeper's pass: the position holds no trailing stop, and L1's
	// accept window has closed; L1 is settled, never sent or asked about
	// again.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE client_order_id = $1`, l1)
	require.NoError(t, err)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).QueueFollowsWith(client)
	_, _ = runner.Finish(ctx, lockKey1, e1.Order.ClientOrderID)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed'`, l1),
		"a marked trailing stop the position does not hold past its window is settled, not left unknown for ever")
	// As the code before left it: failed, its order unknown, asked about
	// at every sweep grace.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET outcome = 'failed' WHERE client_order_id = $1`, l1)
	require.NoError(t, err)

	// Later the strategy enters again with the same template.
	e2, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"rv-trail2-e2"}`))
	require.NoError(t, err)
	require.Len(t, e2.Legs, 1)
	require.Equal(t, "open", e2.Legs[0].Status)
	f.SetPosition("BTCUSDT", "Buy", decimal.RequireFromString("0.02"))
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "E2's trailing stop is set")

	// The sweeper asks about the unknown L1 again.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = now() - interval '1 hour' WHERE client_order_id = $1`, l1)
	require.NoError(t, err)
	unknown, err := db.ListUnknownLegs(ctx, b.pool, time.Minute, 10)
	require.NoError(t, err)
	for _, l := range unknown {
		outcome, err := runner.AskUnknown(ctx, l)
		t.Logf("ask %s: %q %v", l.ClientOrderID, outcome, err)
	}
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(),
		"E2's trailing stop (recorded open) was cleared at Bybit by the sweeper's ask about E1's marked, unknown trailing stop")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed'`, l1),
		"the ask settles it: never asked about again")
}

// E1's trailing stop is set at Bybit but its answer is lost (leg L1 armed,
// unrecorded). The trader's cancel clears it itself, under its claim, and
// records L1 cancelled by it in its commit: no later pass acts on the
// position's setting for L1, so E2's trailing stop of the same distance,
// set after the cancel, stays.
func TestCancelClearsAMarkedBybitTrailingStopItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, raw := bybitLinear(t) // BTCUSDT at 60000
	lose := &atomic.Bool{}
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": loseTrailing{Venue: raw, lose: lose, applied: true}})
	fb := followOn(t, b, venues, nil)

	lose.Store(true)
	e1, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"cl-trail-e1"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", e1.Order.Status)
	lose.Store(false)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "E1's trailing stop took effect, its answer lost")
	var lockKey1, l1 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e1.Order.ClientOrderID).Scan(&lockKey1, &l1))

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"cl-trail-c"}`))
	require.NoError(t, err)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "the cancel cleared E1's trailing stop")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs l JOIN orders o USING (client_order_id)
WHERE l.client_order_id = $1 AND l.outcome IS NOT NULL AND o.status = 'cancelled' AND o.cancelled_by = $2`, l1, cl.TraceID),
		"L1 is recorded cancelled by the cancel, in its commit")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE trace_id = $1 AND event = 'cancelled'
AND detail->'exits_cleared' ? $2`, cl.TraceID, l1))

	e2, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"cl-trail-e2"}`))
	require.NoError(t, err)
	require.Len(t, e2.Legs, 1)
	require.Equal(t, "open", e2.Legs[0].Status)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "E2's trailing stop is set")

	// No pass on E1's legs acts any more: none is open or unknown.
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey1, e1.Order.ClientOrderID)
	require.NoError(t, err)
	unknown, err := db.ListUnknownLegs(ctx, b.pool, 0, 10)
	require.NoError(t, err)
	require.Empty(t, unknown)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String())
}

// The pass on E1's marked trailing stop L1 and E2's trailing stop race: E2
// is sent while the pass is about to look L1 up. The pass holds the
// position's setting lock from its check for a later trailing stop to its
// record, so E2's trailing stop is set after the pass settled L1, never
// between its check and its lookup (where the pass would take it for L1's
// and clear it).
func TestMarkedBybitTrailingStopPassDoesNotRaceALaterEntrysTrailingStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, raw := bybitLinear(t) // BTCUSDT at 60000
	lose := &atomic.Bool{}
	var l1 string
	var race atomic.Bool
	e2Done := make(chan error, 1)
	var venues *exchange.Registry
	var fb *followBundle
	venue := loseTrailing{Venue: raw, lose: lose, beforeLookup: func(o exchange.Order) {
		if o.ClientOrderID != l1 || !race.CompareAndSwap(true, false) {
			return
		}
		// The strategy's next entry arrives now; give its trailing stop
		// time to be set if nothing holds it back.
		go func() {
			e2, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
				"trailing_stop":{"distance":600},"trace_id":"race-trail-e2"}`))
			if err == nil && len(e2.Legs) != 1 {
				err = fmt.Errorf("E2 has %d legs", len(e2.Legs))
			}
			e2Done <- err
		}()
		select {
		case err := <-e2Done:
			e2Done <- err
		case <-time.After(time.Second):
		}
	}}
	venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": venue})
	fb = followOn(t, b, venues, nil)

	lose.Store(true)
	e1, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"race-trail-e1"}`))
	require.NoError(t, err)
	lose.Store(false)
	var lockKey1 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e1.Order.ClientOrderID).Scan(&lockKey1, &l1))
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"race-trail-c"}`))
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND cancelled_by = $2 AND outcome IS NULL`, l1, cl.TraceID),
		"L1's send may still take effect: left to the pass")

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE client_order_id = $1`, l1)
	require.NoError(t, err)
	race.Store(true)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey1, e1.Order.ClientOrderID)
	require.NoError(t, err)
	require.False(t, race.Load(), "the pass looked L1 up")
	require.NoError(t, <-e2Done)
	require.Equal(t, "600", f.TrailingStop("BTCUSDT").String(), "E2's trailing stop was cleared by the pass on E1's marked one")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed'`, l1))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders o JOIN order_legs l USING (client_order_id)
WHERE l.trace_id = 'k:race-trail-e2' AND l.role = 'trailing_stop' AND o.status = 'open'`), "E2's trailing stop is recorded open")
}

// A long's 2 % trailing stop (1200) gets an HTTP 500, never applied (its
// request may still take effect until its accept window closes), and the
// trader sets 900 on the position by hand. The trader's cancel marks the
// leg: another distance on the position, with no later leg of hoox's, is
// not this leg's setting ended ("replaced") but its setting not there yet,
// as for a setting not found — left marked, and decided only once its
// window closed: not placed, the hand's 900 left alone. Recorded expired
// at once, a request landing late would leave a trailing stop the cancel
// meant to clear resting unrecorded.
func TestMarkedBybitTrailingStopWithAnotherDistanceIsDecidedAfterItsWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v := bybitLinear(t) // BTCUSDT at 60000
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	fb := followOn(t, b, venues, nil)

	f.Inject(bybitfake.PathTradingStop, 1, bybitfake.Fault{HTTPStatus: http.StatusInternalServerError})
	e, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"percent":2},"trace_id":"trail-hand-e"}`))
	require.NoError(t, err)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "the trailing stop was not applied")
	var lockKey, leg string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e.Order.ClientOrderID).Scan(&lockKey, &leg))

	// The trader sets 900 by hand (the same request, outside hoox).
	hand := exchange.Order{ClientOrderID: "by-hand", Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: decimal.RequireFromString("0.01"), Exit: exchange.RoleTrailingStop,
		TrailingStop: &exchange.Attached{Distance: decimal.NewNullDecimal(decimal.NewFromInt(900))}}
	_, err = v.Place(ctx, hand)
	require.NoError(t, err)
	require.Equal(t, "900", f.TrailingStop("BTCUSDT").String())

	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"trail-hand-c"}`))
	require.NoError(t, err)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)
	_, err = runner.Finish(ctx, lockKey, e.Order.ClientOrderID)
	t.Logf("pass inside the accept window: %v", err)
	var state string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT concat_ws(' ', coalesce(outcome, '-'), coalesce(cancelled_by, '-')) FROM order_legs WHERE client_order_id = $1`, leg).
		Scan(&state))
	require.Equal(t, "- k:trail-hand-c", state, "decided (%s) while its own request could still take effect", state)

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = sent_at - interval '10 minutes' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, e.Order.ClientOrderID)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed'`, leg))
	require.Equal(t, "900", f.TrailingStop("BTCUSDT").String(), "the hand's trailing stop is left alone")
}
