package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/testfactory"
)

// The audit retention keeps the events of a trace whose exit leg may
// exist, as it does for a primary
// (TestAnUnknownTraceKeptPastItsExpiryKeepsItsAuditTrail): a leg failed as
// unknown (a missed stop-loss at Binance spot, an OKX trailing stop, a leg
// sent ten times and never seen) is asked about for ever, and its
// leg_failed event is the only place the admin API and the web page show
// the leg's client order ID and why it is unknown (the leg has no orders
// row).
func TestAnUnknownLegKeepsItsAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	long := time.Now().Add(-100 * 24 * time.Hour)
	o := reconcileOrder
	o.ClientOrderID = "hxentryofunknownleg00000000000"
	// The entry filled and was recorded long ago; its trace has been purged
	// since (only its orders row remains), as every dispatched trace is.
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:legkept", Status: db.TraceDispatched, ClientOrderID: o.ClientOrderID,
		ReceivedAt: long})
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:legkept", Order: o, SentAt: long, Outcome: db.IntentDispatched})
	const legID = "hxunknownstoploss0000000000000"
	_, err := b.pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
		exchange, mode, order_spec, sent_at, attempts, outcome, created_at, settled_at)
		VALUES ($1, $2, 1, 'stop_loss', 'k:legkept', 'k:legkept', 'paper', 'live', '{}'::jsonb, $3, 1, 'failed', $3, now())`,
		legID, o.ClientOrderID, long)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO trace_events (trace_id, event, at, detail) VALUES
		('k:legkept', 'received', $1, '{}'),
		('k:legkept', 'leg_failed', $1, jsonb_build_object('client_order_id', $2::text, 'role', 'stop_loss',
		    'reason', 'exit '||$2::text||' was never seen at the venue; not re-sent because binance may still fill a late request'))`,
		long, legID)
	require.NoError(t, err)

	_, err = db.Purge(ctx, b.pool, db.PurgeParams{AuditRetention: 90 * 24 * time.Hour})
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, legID),
		"the leg is still unknown: the sweeper keeps asking the venue about it")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:legkept' AND event = 'leg_failed'`),
		"the unknown leg's leg_failed event (which order to look for, and why) was deleted by the audit retention")
}
