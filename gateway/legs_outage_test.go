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

// The second part of a Bybit split close got an answer hoox reads as "may
// exist", and Bybit's order queries then failed for longer than
// SweepGiveUp (an outage): the leg runner gives the leg up (failed,
// unknown, notified). Once Bybit answers again and holds no order under
// the part's ID, the sweeper opens the leg again — sending it under its ID
// is safe at Bybit (exchange.ResendsSameID) — and the next pass sends it:
// the close completes, where the give-up alone left it failed for ever.
func TestAGivenUpLegIsSentAgainOnceTheVenueAnswers(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out := bybitSplitClose(t, b, "bybit-leg-outage", func() {
		b.bybit.InjectPlacements(1, bybitfake.Refuse(170999, "Untabled refusal."))
	})
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL`))

	b.bybit.Inject(bybitfake.PathRealtime, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	b.bybit.Inject(bybitfake.PathHistory, 1_000_000, bybitfake.Fault{HTTPStatus: http.StatusServiceUnavailable})
	_, err := b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '3 hours', created_at = now() - interval '3 hours'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = now() - interval '3 hours'`)
	require.NoError(t, err)

	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, SweepGiveUp: time.Hour}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)

	// The outage ends: Bybit answers again, and holds no order under the
	// part's ID.
	b.bybit.ClearFaults()
	// Two sweeps, with no time moved: the first after the outage asks
	// the leg (the venue never answered about it, so nothing spaces the
	// ask: db.legUnknownDue) and opens it again, the next sends it.
	for range 2 {
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	var outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(outcome, 'open') FROM order_legs WHERE parent_client_order_id = $1`,
		out.Order.ClientOrderID).Scan(&outcome))
	t.Logf("close part after a 3-h read outage and 2 sweeps once Bybit answers: %s", outcome)
	require.Equal(t, "dispatched", outcome,
		"once Bybit answers 'not found' the part can be sent again under its ID (as before the give-up): the close completes")
}
