package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/testfactory"
)

// A trace whose order is unknown (failed, "whether order X exists is
// unknown: check the venue") is kept past its expiry — the purge skips it
// (OrderUnknownSQL) and at Bybit, which never proves an order absent, that
// is for ever — but the same purge deletes its audit rows once they pass
// HOOX_AUDIT_RETENTION. The operator is left with a failed, blocked trace
// that cannot be released without force and whose history — the failed
// event with the reason and the client order ID to look for — is gone.
// DECISIONS: retention ≥ TTL so "a live trace keeps its audit trail".
func TestAnUnknownTraceKeptPastItsExpiryKeepsItsAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	long := time.Now().Add(-100 * 24 * time.Hour)
	o := reconcileOrder
	o.ClientOrderID = "hxunknownkept00000000000000000"
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:kept", Status: db.TraceFailed, ClientOrderID: o.ClientOrderID,
		ReceivedAt: long})
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:kept", Order: o, SentAt: long, Outcome: db.IntentFailed})
	_, err := b.pool.Exec(ctx, `INSERT INTO trace_events (trace_id, event, at, detail) VALUES
		('k:kept', 'received', $1, '{}'),
		('k:kept', 'failed', $1, jsonb_build_object('reason', 'venue could not be asked; whether order `+o.ClientOrderID+` exists is unknown: check the venue'))`, long)
	require.NoError(t, err)

	_, err = db.Purge(ctx, b.pool, db.PurgeParams{AuditRetention: 90 * 24 * time.Hour})
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:kept'`), "kept: its order may exist")
	events := count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:kept' AND event = 'failed'`)
	t.Logf("trace kept (unknown) after the purge; its failed events left: %d", events)
	require.EqualValues(t, 1, events, "the kept trace's failed event (why, and which order to look for) was deleted by the audit retention")
}

// A dead Bybit attempt's intent the sweeper left open for the signal's
// resend (asked_at set: its order may still be booked, and it is asked
// about for as long) has no trace; the audit retention deleted its events
// — the dispatch_started and the swept event that say which order to look
// for — as those of any trace-less attempt, while the intent stays open
// for ever.
func TestAnIntentLeftOpenForTheResendKeepsItsAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	long := time.Now().Add(-100 * 24 * time.Hour)
	o := reconcileOrder
	o.ClientOrderID = "hxleftopenkept0000000000000000"
	testfactory.Intent(t, b.pool, testfactory.IntentOpts{TraceID: "k:left-open", Exchange: "bybit", Order: o, SentAt: long})
	_, err := b.pool.Exec(ctx, `UPDATE dispatch_intents SET asked_at = $1 WHERE client_order_id = $2`, long.Add(time.Minute), o.ClientOrderID)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `INSERT INTO trace_events (trace_id, event, at, detail) VALUES
		('k:left-open', 'dispatch_started', $1, jsonb_build_object('client_order_id', $2::text)),
		('k:left-open', 'swept', $1, jsonb_build_object('client_order_id', $2::text, 'found', false, 'left_open', true))`, long, o.ClientOrderID)
	require.NoError(t, err)

	_, err = db.Purge(ctx, b.pool, db.PurgeParams{AuditRetention: 90 * 24 * time.Hour})
	require.NoError(t, err)
	events := count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:left-open'`)
	t.Logf("events of the left-open intent after the purge: %d", events)
	require.EqualValues(t, 2, events, "the open intent's events (which order to look for) are kept while it is open")
}
