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
