package gateway_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
)

// A leg whose send lost its answer (it may exist at the venue) and whose
// venue then cannot be asked is looked up on every sweep for ever: the
// sweeper gives a primary's intent up after SweepGiveUp (the trace ends
// failed, "whether order X exists is unknown", the operator is notified),
// but a leg has no such bound — it stays open, the only trace of it a WARN
// log per sweep, no leg_failed event, no notification. The rest of a split
// close (or a stop-loss) may or may not be at the venue and nobody is told.
func TestALegWhoseVenueCannotBeAskedIsGivenUpLikeAnIntent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	// The close's second part: an answer hoox reads as "may exist".
	out := bybitSplitClose(t, b, "bybit-leg-unasked", func() {
		b.bybit.InjectPlacements(1, bybitfake.Refuse(170999, "Untabled refusal."))
	})
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL`),
		"the second part was sent and its outcome is unknown")

	// Bybit's order queries then fail (an outage, a revoked read
	// permission) for longer than SweepGiveUp.
	b.bybit.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	b.bybit.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	_, err := b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '3 hours', created_at = now() - interval '3 hours'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = now() - interval '3 hours'`)
	require.NoError(t, err)

	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, SweepGiveUp: time.Hour}, b.venues, nil, nil)
	asked := b.bybit.Requests(bybitfake.PathRealtime)
	for range 3 {
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	var outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(outcome, 'open') FROM order_legs WHERE parent_client_order_id = $1`,
		out.Order.ClientOrderID).Scan(&outcome))
	failedEvents := count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:bybit-leg-unasked' AND event IN ('leg_failed', 'failed')`)
	t.Logf("order queries by the sweeps: %d", b.bybit.Requests(bybitfake.PathRealtime)-asked)
	t.Logf("leg outcome after 3 h of unanswered lookups and 3 sweeps: %s; failed events: %d", outcome, failedEvents)
	require.Equal(t, "failed", outcome, "a leg whose venue could not be asked for SweepGiveUp ends failed (unknown), as an intent does")
	require.Equal(t, 1, failedEvents, "the operator is told once")
}

// The sweeper takes open legs a batch of 100 primaries at a time, the
// oldest first (db.ListOpenLegs: ORDER BY min(created_at) LIMIT 100), and a
// leg whose venue cannot answer never leaves that list (no give-up, above).
// Once 100 primaries hold such a leg (its venue down, or no longer
// configured on the replica that sweeps), no newer leg is ever swept: here a
// close part planned and never sent — which the sweeper would place at once
// — waits behind them, and the position is never closed.
func TestLegsTheVenueCannotAnswerDoNotStarveTheOthers(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out := bybitSplitClose(t, b, "bybit-starve", func() {
		b.bybit.InjectPlacements(1, bybitfake.Refuse(170999, "Untabled refusal."))
	})

	// 100 older primaries with a sent leg the venue cannot be asked about
	// (copies of this one, at a venue this replica no longer configures:
	// an outage does the same while it lasts), and one newer leg planned,
	// never sent, at Bybit.
	_, err := b.pool.Exec(ctx, `
INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key, exchange, mode, order_spec,
                        sent_at, attempts, created_at)
SELECT 'hxstuck' || g, 'parent-stuck-' || g, 1, role, trace_id, lock_key, 'bybit-old', mode,
       jsonb_set(order_spec, '{ClientOrderID}', to_jsonb('hxstuck' || g)), now() - interval '3 hours', 1, now() - interval '3 hours'
FROM order_legs, generate_series(1, 100) g WHERE parent_client_order_id = $1`, out.Order.ClientOrderID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `
INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key, exchange, mode, order_spec, created_at)
SELECT 'hxhealthy', 'parent-healthy', 1, role, trace_id, lock_key, exchange, mode,
       jsonb_set(order_spec, '{ClientOrderID}', to_jsonb('hxhealthy'::text)), now() - interval '1 minute'
FROM order_legs WHERE parent_client_order_id = $1`, out.Order.ClientOrderID)
	require.NoError(t, err)

	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, SweepGiveUp: time.Hour}, b.venues, nil, nil)
	outcome := func() string {
		var o string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(outcome, 'open') FROM order_legs WHERE client_order_id = 'hxhealthy'`).Scan(&o))
		return o
	}
	for range 2 {
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	starved := outcome()
	// The same sweep with the stuck legs gone places it at once.
	_, err = b.pool.Exec(ctx, `DELETE FROM order_legs WHERE client_order_id LIKE 'hxstuck%'`)
	require.NoError(t, err)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	t.Logf("newer leg after two sweeps behind 100 stuck legs: %s; after one sweep without them: %s", starved, outcome())
	require.Equal(t, "dispatched", starved, "a leg the sweeper could place waits for ever behind legs the venue cannot answer")
}
