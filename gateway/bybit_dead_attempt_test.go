package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// deadBybitAttempt runs a signal whose first attempt sends its create to
// Bybit, which takes it into its engine only after delay (an asynchronous
// create, bybitfake.LateInEngine), and then dies before recording
// anything; the sweeper runs once past the attempt's accept window and
// the sweep grace, while Bybit still holds nothing.
type deadAttempt struct {
	gw    *gateway.Service
	pool  *pgxpool.Pool
	fake  *bybitfake.Server
	clock *testutil.Clock
	sweep *jobs.SweepWorker
	body  string
}

func deadBybitAttempt(t *testing.T, traceID string, delay time.Duration) deadAttempt {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Venues: venues,
		Jobs: &jobRecorder{}, AfterVenue: crashOnce()})
	t.Cleanup(gw.Close)

	body := `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"` + traceID + `"}`
	f.InjectPlacements(1, bybitfake.LateInEngine(delay))
	executeCrashing(t, gw, input(t, body))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL`))
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 minute'`)
	require.NoError(t, err)
	sw := jobs.NewSweepWorker(pool, jobs.Config{}, venues, nil, jobs.NewMetrics(nil))
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Empty(t, f.Orders(), "Bybit has booked nothing yet")
	return deadAttempt{gw: gw, pool: pool, fake: f, clock: clock, sweep: sw, body: body}
}

// A dead attempt's Bybit create that Bybit never booked, and nobody
// resent before the sweeper asked: the trader's resend places the order
// under the dead attempt's client order ID, as a resend before the sweep
// does (Bybit keeps an orderLinkId "always unique", create-order.mdx:74,
// and refuses another create under it, 110072 "OrderLinkedID is
// duplicate", error.mdx:133 — so the late original, should it come, is
// refused). Before, the sweeper ended the trace as a missed trade and the
// resend was a 409 with nothing at the venue: a trade lost by the timing
// of a resend.
func TestADeadBybitAttemptNeverBookedIsPlacedByTheResendAfterTheSweep(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := deadBybitAttempt(t, "bybit-dead-never-booked", 24*time.Hour)
	gw, f, clock, body := d.gw, d.fake, d.clock, d.body

	out, err := gw.Execute(ctx, input(t, body))
	require.NoError(t, err, "the resend places the order the dead attempt never got booked")
	require.Equal(t, db.TraceDispatched, out.Status)
	require.NotNil(t, out.Order)
	require.Len(t, f.Orders(), 1, "one order at Bybit")
	require.Equal(t, f.Orders()[0].OrderLinkID, out.Order.ClientOrderID, "under the dead attempt's client order ID")

	// The dead attempt's create reaches Bybit's engine after all: refused
	// as a duplicate, never a second order.
	clock.Advance(25 * time.Hour)
	require.Zero(t, f.PendingLate())
	require.Equal(t, 1, f.LateRefused(), "the late original is refused under the ID the resend used")
	require.Len(t, f.Orders(), 1, "still one order at Bybit")

	_, err = gw.Execute(ctx, input(t, body))
	ge := requireCode(t, err, "duplicate")
	require.Equal(t, db.TraceDispatched, ge.Original.Status)
}

// The same dead attempt, but Bybit books it late and nobody resends: the
// sweeper keeps looking for it and records it once Bybit shows it (never
// lost); a resend then is a 409 with that order, never a second one.
func TestADeadBybitAttemptBookedLateIsRecordedByTheSweeper(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := deadBybitAttempt(t, "bybit-dead-booked-late", 10*time.Minute)
	gw, f, clock, sw, body, pool := d.gw, d.fake, d.clock, d.sweep, d.body, d.pool

	clock.Advance(10 * time.Minute)
	require.Len(t, f.Orders(), 1, "Bybit booked the dead attempt's order late")
	// The next ask is due (its spacing since the last answer has passed).
	_, err := pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = asked_at - interval '1 hour', settled_at = settled_at - interval '1 hour'`)
	require.NoError(t, err)
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM orders`), "the late order is recorded")

	_, err = gw.Execute(ctx, input(t, body))
	ge := requireCode(t, err, "duplicate")
	require.Equal(t, db.TraceDispatched, ge.Original.Status)
	require.Len(t, f.Orders(), 1)
}
