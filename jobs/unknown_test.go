package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/testfactory"
)

// seedUnknown writes a trace that ended failed with its order unknown (the
// reconcile gave up), its intent failed.
func seedUnknown(t *testing.T, b *testBundle, traceID string, o exchange.Order) {
	t.Helper()
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: traceID, Status: db.TraceFailed, Symbol: o.Symbol,
		Action: o.Action, ClientOrderID: o.ClientOrderID, ReceivedAt: time.Now().Add(-time.Hour)})
	seedIntent(t, b.pool, traceID, o, time.Now().Add(-time.Second), db.IntentFailed)
}

func intentOutcomeOf(t *testing.T, b *testBundle, clientOrderID string) db.IntentOutcome {
	t.Helper()
	var o db.IntentOutcome
	require.NoError(t, b.pool.QueryRow(context.Background(), "SELECT outcome FROM dispatch_intents WHERE client_order_id = $1", clientOrderID).Scan(&o))
	return o
}

// B3: the sweeper keeps asking about traces whose order is unknown, so they
// do not stay blocked forever: an order the venue holds is recorded and
// the trace dispatched; one a venue that refuses late requests proves
// absent resolves the intent (the trace stays failed, now purgeable); at a
// venue that may still fill it late, it stays unknown.
func TestSweeperResolvesTracesWhoseOrderWasUnknown(t *testing.T) {
	t.Parallel()
	t.Run("Held", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setup(t)
		_, err := b.paper.Place(ctx, reconcileOrder)
		require.NoError(t, err)
		seedUnknown(t, b, "k:unknown-held", reconcileOrder)

		n, err := newSweeper(t, b).Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:unknown-held"))
		require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:unknown-held'"))
		require.Equal(t, db.IntentDispatched, intentOutcomeOf(t, b, reconcileOrder.ClientOrderID))
	})
	t.Run("ProvenAbsent", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setup(t)
		seedUnknown(t, b, "k:unknown-absent", reconcileOrder)

		n, err := newSweeper(t, b).Sweep(ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:unknown-absent"))
		require.Equal(t, db.IntentNotPlaced, intentOutcomeOf(t, b, reconcileOrder.ClientOrderID))
		_, err = db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: "k:unknown-absent", By: "admin", LockWait: time.Second})
		require.NoError(t, err, "resolved: released without force")
	})
	t.Run("MayFillLate", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		b := setup(t)
		b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": mayFillLate{b.paper}})
		seedUnknown(t, b, "k:unknown-late", reconcileOrder)

		n, err := newSweeper(t, b).Sweep(ctx)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, db.IntentFailed, intentOutcomeOf(t, b, reconcileOrder.ClientOrderID), "still unknown")
	})
}
