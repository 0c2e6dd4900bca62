package jobs_test

import (
	"context"
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

// Intents the sweeper left open for the resend at Bybit are never given up
// and, while Bybit does not answer, their asked_at is never moved: they stay
// due and, being the oldest sends, fill the stranded listing's batch ahead
// of every fresh dead attempt, at any venue. The sweep then skips them all
// (Bybit is "down") and never reaches the dead attempt at another venue,
// whose order exists: it is not recorded for as long as Bybit's reads fail.
func TestLeftOpenBybitIntentsDoNotHideAnotherVenuesDeadAttemptDuringABybitOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v, _ := bybitUnknowns(t, b, 0, 0)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": v, "paper": b.paper})

	// 100 dead Bybit attempts of past weeks, each left open for a resend
	// that never came (asked_at set by the sweeper's answered ask).
	const leftOpen = 100
	for i := range leftOpen {
		o := exchange.Order{ClientOrderID: fmt.Sprintf("hxbybitleftopen%017d", i), Symbol: "BTCUSDT", Action: "buy", Side: "buy",
			OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
		testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: fmt.Sprintf("k:left-open-%d", i), Exchange: "bybit", Order: o,
			SentAt: time.Now().Add(-time.Duration(leftOpen-i) * 24 * time.Hour)})
	}
	_, err := b.pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = now() - interval '2 hours' WHERE exchange = 'bybit'`)
	require.NoError(t, err)

	// A paper attempt died a minute ago after its order was placed.
	paperOrder := exchange.Order{ClientOrderID: "hxpaperdeadattempt00000000000001", Symbol: "ETHUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("1")}
	_, err = b.paper.Place(ctx, paperOrder)
	require.NoError(t, err)
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:paper-dead", Order: paperOrder, SentAt: time.Now().Add(-time.Minute)})

	// Bybit's order queries fail (an outage, or a key that can no longer read).
	f.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	f.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})

	sw := jobs.NewSweepWorker(b.pool, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	for range 3 {
		_, err := sw.Sweep(ctx)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:paper-dead'`),
		"the paper attempt's order is recorded by the sweeper although Bybit cannot be asked")
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:paper-dead"))
}

// Left-open intents are listed in turns across venues: Bybit linear's
// (whose reads fail) are many and older, Bybit spot's one is newer, and
// its original was booked late. Listed by send time alone, Bybit linear's
// filled the batch and the spot order stayed unrecorded for as long as
// linear's reads failed (for ever, were linear removed from the config).
func TestLeftOpenIntentsAtAFailingVenueDoNotHideALateBookingAtAnotherBybitVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, v, _ := bybitUnknowns(t, b, 0, 0)
	clock := testutil.NewClock(time.Now())
	fs := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	spot, err := bybit.New(bybit.Config{Market: bybit.MarketSpot, APIKey: fs.APIKey(), APISecret: fs.APISecret(), BaseURL: fs.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"bybit": v, "bybit-spot": spot})

	const leftOpen = 100
	for i := range leftOpen {
		o := exchange.Order{ClientOrderID: fmt.Sprintf("hxbybitleftopen%017d", i), Symbol: "BTCUSDT", Action: "buy", Side: "buy",
			OrderType: "market", Quantity: decimal.RequireFromString("0.01")}
		testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: fmt.Sprintf("k:left-open-%d", i), Exchange: "bybit", Order: o,
			SentAt: time.Now().Add(-time.Duration(leftOpen-i) * 24 * time.Hour)})
	}
	// The spot attempt died an hour ago; the sweeper found nothing and left
	// it open; Bybit booked the original since.
	late := exchange.Order{ClientOrderID: "hxbybitspotbookedlate00000000001", Symbol: "BTCUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("0.001")}
	_, err = spot.Place(ctx, late)
	require.NoError(t, err)
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:spot-late", Exchange: "bybit-spot", Order: late,
		SentAt: time.Now().Add(-time.Hour)})
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = sent_at + interval '10 minutes'`)
	require.NoError(t, err)

	f.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	f.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})

	sw := jobs.NewSweepWorker(b.pool, jobs.Config{}, b.venues, nil, jobs.NewMetrics(nil))
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:spot-late"),
		"the spot order booked late is recorded although Bybit linear cannot be asked")
	require.LessOrEqual(t, lookups(f), 14, "Bybit linear, which did not answer, was asked about one order")
}
