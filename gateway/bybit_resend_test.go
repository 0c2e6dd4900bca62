package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// A dead attempt's Bybit create may be booked late (asynchronous create,
// bybitfake.LateInEngine; DECISIONS "Bybit refuses no late request"): "not
// found" past its window proves nothing, but a resend may send it again
// under the same ID (IDKeeper). When that same-ID re-send is then proven
// never sent (ErrUnreachable: Bybit's rate limit, 10006 before anything is
// accepted) the gateway settles the intent `unsent` — "exactly the arming
// armed+1" — and answers "nothing was placed". But the intent also stood
// for the dead attempt's send, which is still unknown: `unsent` takes it
// out of the sweeper's reach (only open intents are stranded), so when
// Bybit books the original nothing ever records it: an order at the venue
// hoox never recorded, and a sender told "nothing was placed".
func TestBybitSameIDResendProvenUnsentDoesNotForgetTheDeadAttemptsSend(t *testing.T) {
	t.Parallel()
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
	require.False(t, exchange.RefusesLate(v))
	require.True(t, exchange.ResendsSameID(v, exchange.Order{}))
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, url), Venues: venues,
		Jobs: &jobRecorder{}, AfterVenue: crashOnce()})
	t.Cleanup(gw.Close)

	const body = `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"bybit-dead-then-unreachable"}`
	// The first attempt's create reaches Bybit's backend only later (its
	// answer a 10016); hoox dies before recording anything.
	f.InjectPlacements(1, bybitfake.LateInEngine(10*time.Minute))
	executeCrashing(t, gw, input(t, body))
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL`))

	// The sender resends once the accept window has closed (Postgres's
	// clock: the send is moved back). Bybit shows nothing yet, so the
	// resend sends again under the same ID — and Bybit's rate limit
	// refuses it before accepting anything.
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 minute'`)
	require.NoError(t, err)
	f.InjectPlacements(1, bybitfake.TooManyVisits(time.Millisecond))
	resend := input(t, body)
	_, err = gw.Execute(ctx, resend)
	ge := requireCode(t, err, codes.Unavailable)
	var outcome string
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(outcome, '') FROM dispatch_intents`).Scan(&outcome))
	t.Logf("resend answered 503 %q; intent outcome now %q", ge.Detail, outcome)
	require.Contains(t, ge.Detail, "an earlier attempt's order may exist", "not \"nothing was placed\": the dead attempt's order may be booked")
	require.Empty(t, outcome, "the intent stays open: it stands for the dead attempt's send too")
	require.Contains(t, eventsOf(t, pool, resend.Trace.ID), db.EventDispatchAborted, "the aborted send is in the audit trail")

	// Bybit's backend books the dead attempt's create. Nobody resends
	// (or the resends land elsewhere); the sweeper runs past its grace.
	clock.Advance(10 * time.Minute)
	require.Len(t, f.Orders(), 1, "the dead attempt's order is at Bybit")
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 hour', settled_at = settled_at - interval '1 hour'`)
	require.NoError(t, err)
	sw := jobs.NewSweepWorker(pool, jobs.Config{}, venues, nil, jobs.NewMetrics(nil))
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	recorded := count(t, pool, `SELECT count(*) FROM orders`)
	t.Logf("orders at Bybit: %d; recorded by hoox: %d; intent outcome %q", len(f.Orders()), recorded, outcome)
	require.Equal(t, 1, recorded,
		"the order the dead attempt placed at Bybit is recorded: the resend's unreachable same-ID send settled the intent %q, which no sweep looks at", outcome)
}

// The same through last round's fix itself: the resend's re-arm of the
// dead attempt's intent commits but its answer is lost (a connection
// reset, a failover at the commit). The attempt settles "exactly the
// arming armed+1" unsent — but that arming is the same row as the dead
// attempt's send, whose order Bybit may still book. Before the fix the
// intent stayed open and the sweeper recorded the late order.
func TestBybitLostReArmAnswerDoesNotForgetTheDeadAttemptsSend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, url)
	rc := &replyCutter{}
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: cuttingPool(t, url, rc), Venues: venues,
		Jobs: &jobRecorder{}, AfterVenue: crashOnce()})
	t.Cleanup(gw.Close)

	const body = `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"bybit-dead-then-lost-rearm"}`
	f.InjectPlacements(1, bybitfake.LateInEngine(10*time.Minute))
	executeCrashing(t, gw, input(t, body))
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 minute'`)
	require.NoError(t, err)

	// The resend's re-arm (its Bind carries the trace ID) commits; its
	// answer is lost.
	rc.arm("bybit-dead-then-lost-rearm")
	_, err = gw.Execute(ctx, input(t, body))
	ge := requireCode(t, err, codes.Unavailable)
	var outcome string
	var attempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT coalesce(outcome, ''), attempts FROM dispatch_intents`).Scan(&outcome, &attempts))
	t.Logf("resend answered 503 %q; intent outcome %q after %d armings", ge.Detail, outcome, attempts)
	require.Contains(t, ge.Detail, "an earlier attempt's order may exist", "not \"nothing was placed\": the dead attempt's order may be booked")

	clock.Advance(10 * time.Minute)
	require.Len(t, f.Orders(), 1, "the dead attempt's order is at Bybit")
	_, err = pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 hour'`)
	require.NoError(t, err)
	_, err = jobs.NewSweepWorker(pool, jobs.Config{}, venues, nil, jobs.NewMetrics(nil)).Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM orders`),
		"the order the dead attempt placed at Bybit is recorded; the lost re-arm's settle left the intent %q", outcome)
}
