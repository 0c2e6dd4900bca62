package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// bybitUnknowns starts a Bybit fake as b's "bybit" venue and seeds n
// traces that ended failed with their order unknown there (a missed
// trade: the intent failed), sent ago.
func bybitUnknowns(t *testing.T, b *testBundle, n int, ago time.Duration) (*bybitfake.Server, exchange.Venue, []exchange.Order) {
	t.Helper()
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	var orders []exchange.Order
	for i := range n {
		o := exchange.Order{ClientOrderID: fmt.Sprintf("hxbybitunknownasks%014d", i), Symbol: "BTCUSDT", Action: "buy", Side: "buy",
			OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
		traceID := fmt.Sprintf("k:bybit-unknown-%d", i)
		sentAt := time.Now().Add(-ago)
		testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: traceID, Status: db.TraceFailed, Exchange: "bybit", Symbol: o.Symbol,
			Action: o.Action, ClientOrderID: o.ClientOrderID, ReceivedAt: sentAt})
		testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: traceID, Exchange: "bybit", Order: o, SentAt: sentAt,
			Outcome: db.IntentFailed})
		orders = append(orders, o)
	}
	return f, v, orders
}

// lookups is how many order queries (realtime and history) the fake has
// served.
func lookups(f *bybitfake.Server) int {
	return f.Requests(bybitfake.PathRealtime) + f.Requests(bybitfake.PathHistory)
}

// Bybit's order queries fail for days (an outage, or a key that cannot
// read): the sweeper asked every unknown order at every sweep — 100 per
// sweep, each a burst of queries — for as long as it lasted. Now a venue
// that gave no answer in a sweep is asked once per sweep, whatever the
// number of its unknown orders; and the first sweep after the outage asks
// (and records) them all.
func TestAnOutageCostsOneLookupPerSweepAndTheFirstSweepAfterItAsksEveryUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const unknowns, sweeps = 10, 20
	f, v, orders := bybitUnknowns(t, b, unknowns, 2*time.Hour)
	// Bybit booked them all (hoox never learnt it).
	for _, o := range orders {
		_, err := v.Place(ctx, o)
		require.NoError(t, err)
	}

	f.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	f.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	before := lookups(f)
	_, err := v.Lookup(ctx, orders[0])
	require.Error(t, err)
	perLookup := lookups(f) - before
	require.Positive(t, perLookup)

	// Each sweep is one sweep grace later (SweepGrace 1 ms: every unknown
	// order is due at every sweep, as after 30 s at the defaults).
	sw := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, jobs.NewMetrics(nil))
	before = lookups(f)
	for range sweeps {
		_, err := sw.Sweep(ctx)
		require.NoError(t, err)
	}
	queried := lookups(f) - before
	t.Logf("%d sweeps over %d unknown orders during the outage: %d queries (one failed lookup is %d)", sweeps, unknowns, queried, perLookup)
	require.LessOrEqual(t, queried, sweeps*perLookup, "at most one lookup per sweep while Bybit does not answer")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM orders"))

	// The outage ends: the next sweep asks every unknown order and records
	// what Bybit holds.
	f.ClearFaults()
	// The next sweep comes a sweep interval later (at least a grace): the
	// order asked last is due again too.
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET settled_at = settled_at - interval '1 second'`)
	require.NoError(t, err)
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, unknowns, count(t, b.pool, "SELECT count(*) FROM orders"), "all recorded by the first sweep after the outage")
	require.EqualValues(t, unknowns, count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE status = 'dispatched'"))
}

// A missed trade at Bybit (never booked; "not found" proves nothing
// there) was asked about at every sweep grace for ever: each ask a miss of
// realtime and 13 weeks of history. Now the asks are spaced by how long
// Bybit has been answering "not there": over a simulated day of an order
// already hours old, about one an hour, not one per 5-minute step.
func TestAMissedTradeAtBybitIsAskedAboutAboutHourlyOnceHoursOld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v, orders := bybitUnknowns(t, b, 1, 4*time.Hour)
	before := lookups(f)
	_, err := v.Lookup(ctx, orders[0])
	require.ErrorIs(t, err, exchange.ErrNotFound)
	perMiss := lookups(f) - before

	sw := jobs.NewSweepWorker(b.pool, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	const step, steps = 5 * time.Minute, 24 * 12
	before = lookups(f)
	for range steps {
		// Postgres's clock moves on by step: every timestamp of the
		// intent moves back.
		_, err := b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - $1::interval, settled_at = settled_at - $1::interval,
			asked_at = asked_at - $1::interval`, step.String())
		require.NoError(t, err)
		_, err = sw.Sweep(ctx)
		require.NoError(t, err)
	}
	asks := (lookups(f) - before) / perMiss
	t.Logf("a missed trade 4 h old, swept every %s for a day: %d asks of %d queries each", step, asks, perMiss)
	require.Positive(t, asks, "still asked about")
	require.LessOrEqual(t, asks, 30, "about hourly once it is hours old (at most UnknownAskMax apart)")
	require.Equal(t, db.IntentFailed, intentOutcomeOf(t, b, orders[0].ClientOrderID), "still unknown")
}

// The same for legs: close parts given up while Bybit's order queries
// failed (failed, unknown) are asked once per sweep while the queries
// still fail, and the first sweep after the outage asks each and opens
// every one Bybit does not hold again (a same-ID send is safe there), for
// the next pass to send — not one per sweep, nor an hour later.
func TestAnOutageCostsOneLegLookupPerSweepAndTheFirstSweepAfterItReopensEveryGivenUpLeg(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const legs, sweeps = 10, 20
	f, v, _ := bybitUnknowns(t, b, 0, 0)
	for i := range legs {
		o := exchange.Order{ClientOrderID: fmt.Sprintf("hxbybitgivenupleg%015d", i), Symbol: "BTCUSDT", Action: "close", Side: "sell",
			ReduceOnly: true, OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
		spec, err := json.Marshal(o)
		require.NoError(t, err)
		_, err = b.pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
			exchange, mode, order_spec, sent_at, attempts, outcome, settled_at)
			VALUES ($1, $1 || '-parent', 1, 'close_part', 'k:' || $1, 'k:' || $1, 'bybit', 'live', $2,
			        now() - interval '3 hours', 1, 'failed', now() - interval '1 hour')`, o.ClientOrderID, spec)
		require.NoError(t, err)
	}
	f.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	f.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	before := lookups(f)
	_, err := v.Lookup(ctx, exchange.Order{ClientOrderID: "hxprobe", Symbol: "BTCUSDT", Side: "sell", OrderType: "market",
		Quantity: decimal.RequireFromString("0.01")})
	require.Error(t, err)
	perLookup := lookups(f) - before

	sw := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, jobs.NewMetrics(nil))
	before = lookups(f)
	for range sweeps {
		_, err := sw.Sweep(ctx)
		require.NoError(t, err)
	}
	queried := lookups(f) - before
	t.Logf("%d sweeps over %d given-up legs during the outage: %d queries (one failed lookup is %d)", sweeps, legs, queried, perLookup)
	require.LessOrEqual(t, queried, sweeps*perLookup, "at most one lookup per sweep while Bybit does not answer")

	f.ClearFaults()
	// The next sweep comes a sweep interval later (at least a grace): the
	// leg asked last is due again too.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = settled_at - interval '1 second'`)
	require.NoError(t, err)
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, legs, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE event = 'leg_reopened'`),
		"every given-up leg opened again by the first sweep after the outage")
	require.EqualValues(t, legs, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome IS NULL`))
}
