package jobs_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
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

// The reconcile's "stale signal" branch settles the
// intent not_placed after a "not found" at Bybit, where "not found" past
// the accept window proves nothing (RefusesLateRequests is false: Bybit's
// create is asynchronous and may be booked late, bybitfake.LateInEngine).
// ResendsSameID is true on Bybit only because it keeps every orderLinkId
// (IDKeeper), which makes a re-send under the same ID safe — not a verdict
// of absence. The stale branch does not re-send; it records absence, so
// the key is freed (released without force) and the sweeper never asks
// about the order again: when the late original is booked and fills, hoox
// never records it, and a resend after the release goes out under a new
// ID beside it. The same holds for the kill-switch branch.
func TestStaleReconcileAtBybitKeepsTheOrderUnknown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	clock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	require.False(t, exchange.RefusesLate(v), "Bybit may book a create after its window")
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})

	o := exchange.Order{ClientOrderID: "hxbybitstalereconcile00000000001", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
	// The gateway sent it a minute ago (by Postgres's clock) and lost the
	// answer; Bybit's backend has the create and books it later.
	late := v.AcceptWindow() + 2*time.Minute
	f.InjectPlacements(1, bybitfake.LateInEngine(late))
	_, err = v.Place(ctx, o)
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

	sentAt := time.Now().Add(-time.Minute)
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:bybit-stale", Status: db.TraceReconciling, Exchange: "bybit",
		Symbol: o.Symbol, Action: o.Action, ClientOrderID: o.ClientOrderID, ReceivedAt: sentAt, UpdatedAt: time.Now()})
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:bybit-stale", Exchange: "bybit", Order: o,
		SentAt: sentAt, Outcome: db.IntentReconciling})
	args := jobs.ReconcileArgs{TraceID: "k:bybit-stale", Exchange: "bybit", Mode: "live", Order: o, ReceivedAt: sentAt}

	// The reconcile runs past the window (and past MaxSignalAge, 30 s):
	// Bybit does not show the order yet.
	clock.Advance(v.AcceptWindow())
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
		jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil)))
	_, err = w.Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:bybit-stale"))
	require.Equal(t, db.IntentFailed, intentOutcomeOf(t, b, o.ClientOrderID),
		"a Bybit \"not found\" is not proof of absence: the intent must stay unknown, not not_placed (which frees the key)")
	require.Empty(t, f.Orders(), "nothing booked yet")

	// Bybit books the original afterwards, and it fills.
	clock.Advance(late)
	held, booked := f.Order(bybitfake.CategoryLinear, o.ClientOrderID)
	require.True(t, booked, "the late original was booked")
	require.Equal(t, "Filled", held.Status)

	// The sweeper keeps asking about an order whose fate is unknown and
	// records it once the venue shows it (as it does after a missed trade).
	_, err = newSweeper(t, b).Sweep(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE client_order_id = $1", o.ClientOrderID),
		"the order Bybit booked and filled is never recorded")
}
