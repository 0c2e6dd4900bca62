package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// A Binance spot stop-loss leg whose answer was lost ends `failed` as a
// missed order ("whether it exists is unknown"), and the venue books the
// late request an hour later (FaultLateInEngine; Binance spot may still
// fill a late request: README "A missed trade"). As for a primary order
// (db.ListUnknown), the sweeper keeps asking about the leg
// (db.ListUnknownLegs) and records the stop when it turns up: its orders
// row (adopted) and its follow job, so its fill reaches the spot ledger
// and a cancel knows it.
func TestALegFailedAsMissedIsRecordedWhenItTurnsUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(100_000)}})
	venues := binanceVenues(t, f, binance.MarketSpot)
	fb := followOn(t, b, venues, nil)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil)

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","stop_loss":"2800","trace_id":"leg-late"}`))
	require.NoError(t, err)
	f.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))
	res, err := fb.work(t, fb.queuedFollow(t, "k:leg-late"))
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	var lockKey, parent, stopID string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id, client_order_id FROM order_legs WHERE trace_id = 'k:leg-late'`).
		Scan(&lockKey, &parent, &stopID))

	// Past the accept window, not found: failed as a missed order.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:leg-late'`)
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:leg-late' AND outcome = 'failed'`))

	// Binance books the late request; the sweeper runs for a while.
	f.Advance(2 * time.Hour)
	booked := false
	for _, o := range f.Orders() {
		booked = booked || o.ClientOrderID == stopID
	}
	require.True(t, booked, "Binance booked the stop late")
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, venues, nil, nil)
	sweepUntil(t, b.pool, sweeper, func() bool {
		return count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'dispatched'`, stopID) == 1
	})
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'open' AND role = 'stop_loss'`, stopID),
		"the stop Binance holds under the leg's client order ID is recorded")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'dispatched'`, stopID))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE trace_id = 'k:leg-late' AND event = 'leg_placed'
		AND detail->>'client_order_id' = $1 AND (detail->>'adopted')::boolean AND (detail->>'was_unknown')::boolean`, stopID))
	fb.queuedFollowOf(t, stopID)
}

// A leg failed with its order unknown that the venue still does not show
// is settled not_placed only where the venue proves absence (Binance
// USDⓈ-M refuses a late request, past its window); at Binance spot, which
// may still book it, it stays failed and is only marked asked (last in
// line for the next sweep). Nothing is sent.
func TestAnUnknownLegNotFoundIsSettledOnlyWhereAbsenceIsProven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{Balances: map[string]decimal.Decimal{"USDT": decimal.NewFromInt(100_000)}})
	venues := binanceVenues(t, f, binance.MarketSpot, binance.MarketFutures)
	seed := func(id, venue string, attempts int) {
		t.Helper()
		o := exchange.Order{ClientOrderID: id, Symbol: "ETHUSDT", Action: "close", Side: "sell", ReduceOnly: venue == "binance-futures",
			OrderType: "market", Quantity: decimal.NewFromInt(1)}
		spec, err := json.Marshal(o)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
			exchange, mode, order_spec, sent_at, attempts, outcome, settled_at)
			VALUES ($1, $1 || '-parent', 1, 'close_part', 'k:' || $1, 'k:' || $1, $2, 'live', $3,
			        now() - interval '1 hour', $4, 'failed', now() - interval '1 hour')`, id, venue, spec, attempts)
		require.NoError(t, err)
	}
	// A USDⓈ-M leg that used up its sends (maxLegSends, 10), one given up
	// while the venue could not be asked (1 send), and a spot one.
	seed("hxunkfutures", "binance-futures", 10)
	seed("hxunkfutgiven", "binance-futures", 1)
	seed("hxunkspot", "binance", 1)

	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Minute}, venues, nil, nil)
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, sweeper)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	_, err = w.Work(ctx, t, tx, jobs.SweepArgs{}, nil)
	_ = tx.Rollback(ctx)
	require.NoError(t, err)

	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = 'hxunkfutures' AND outcome = 'not_placed'`),
		"USDⓈ-M refuses a late request: not found past the window is never placed")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE trace_id = 'k:hxunkfutures' AND event = 'leg_failed'
		AND (detail->>'was_unknown')::boolean AND NOT (detail->>'found')::boolean`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = 'hxunkfutgiven' AND outcome IS NULL`),
		"given up during an outage, absent now where a same-ID send is safe: open again, for the next pass to send")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE trace_id = 'k:hxunkfutgiven' AND event = 'leg_reopened'`))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = 'hxunkspot' AND outcome = 'failed'
		AND settled_at > now() - interval '1 minute'`), "spot may still book it: unknown, asked again after the others")
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM orders`))
	require.Empty(t, f.Orders(), "nothing sent")
}
