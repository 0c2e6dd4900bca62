package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// windowMissedTrade runs a window-mode signal at a venue that may fill a
// late request (Binance spot's rules: memVenue): the first arrival's
// request is lost and hoox dies; the sender's resend (a new arrival, so a
// new trace ID, inside the dedup window) finds the open intent, does not
// find the order past the accept window and reconciles; the reconcile ends
// the trace failed as a missed trade — an unknown order, to be asked about
// again (README "A missed trade"). The intent keeps the first arrival's
// trace ID, which never committed; the failed trace is the resend's.
func windowMissedTrade(t *testing.T, window time.Duration) (*memBundle, string, string) {
	t.Helper()
	ctx := context.Background()
	venue := &memVenue{dropNext: true}
	b := setupMemWith(t, pgtest.NewDatabase(t), venue, memOpts{window: window, afterVenue: crashOnce()})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`
	executeCrashing(t, b.svc, input(t, body))

	resend := input(t, body)
	out, err := b.svc.Execute(ctx, resend)
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	require.Equal(t, 1, b.jobs.count())
	args := b.jobs.args[0].(jobs.ReconcileArgs)
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, exchange.NewRegistry(map[string]exchange.Venue{"mem": venue}), nil, jobs.NewMetrics(nil))
	require.NoError(t, w.Work(ctx, &river.Job[jobs.ReconcileArgs]{JobRow: &rivertype.JobRow{Attempt: 1, MaxAttempts: 25}, Args: args}))
	var status, outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT t.status, i.outcome FROM trace_ids t JOIN dispatch_intents i ON i.client_order_id = t.client_order_id
WHERE t.trace_id = $1`, resend.Trace.ID).Scan(&status, &outcome))
	require.Equal(t, "failed", status)
	require.Equal(t, "failed", outcome, "a missed trade: the order is unknown")
	return b, body, args.Order.ClientOrderID
}

// The next execution of the signal, after the dedup window, is refused
// with 503 "an earlier order of this key (…, released while its outcome
// was unknown) is not visible …: check the venue" — and so is every later
// one: no operator released anything. The claim reads a failed intent
// whose own trace ID has no trace as "released by force" (traced), but the
// intent's trace ID is the dead first arrival's; the failed trace, which
// still blocks nothing in window mode, is the resend's.
func TestWindowMissedTradeDoesNotBlockEveryLaterExecution(t *testing.T) {
	t.Parallel()
	const window = 300 * time.Millisecond
	b, body, _ := windowMissedTrade(t, window)
	time.Sleep(window + 50*time.Millisecond) // the strategy's next bar: a new execution
	for i := range 2 {
		out, err := b.svc.Execute(context.Background(), input(t, body))
		if err != nil {
			t.Logf("execution %d after the missed trade: %v", i+2, err)
		}
		require.NoError(t, err, "a new execution of the signal is placed: nobody released the missed trade's trace")
		require.Equal(t, db.TraceDispatched, out.Status)
		time.Sleep(window + 50*time.Millisecond)
	}
}

// The missed trade's order is never asked about again: db.ListUnknown
// looks for the failed trace under the intent's trace ID, the first
// arrival's, which never committed. A late fill at the venue is never
// recorded.
func TestWindowMissedTradeIsAskedAboutAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, _, clientOrderID := windowMissedTrade(t, time.Minute)
	_, err := b.pool.Exec(ctx, `UPDATE dispatch_intents SET settled_at = settled_at - interval '1 hour', sent_at = sent_at - interval '1 hour'`)
	require.NoError(t, err)
	unknown, err := db.ListUnknown(ctx, b.pool, time.Minute, 100)
	require.NoError(t, err)
	ids := []string{}
	for _, u := range unknown {
		ids = append(ids, u.Intent.ClientOrderID)
	}
	require.Contains(t, ids, clientOrderID, "the missed trade's unknown order is asked about again (README \"A missed trade\")")
}
