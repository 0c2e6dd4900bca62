package jobs_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// mayFillLate is a venue that does not refuse a request past its own
// expiry (it implements no exchange.LateRefuser, like Binance spot): a
// "not found" after the accept window does not prove the order will never
// exist.
type mayFillLate struct{ exchange.Venue }

// B7: a reconcile whose order is not at a venue that may still fill a late
// request does not send it again: the trace ends failed as a missed trade,
// loudly, and the key stays blocked (its intent is unknown).
func TestReconcileDoesNotResendToAVenueThatMayFillLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": mayFillLate{windowed{b.paper, time.Millisecond}}})
	args := seedReconciling(t, b.pool, "k:missed", reconcileOrder, time.Now().Add(-time.Second))
	logger, logs := testutil.JSONLogs()
	metrics := jobs.NewMetrics(nil)
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
		jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, logger, metrics))

	_, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Empty(t, fills, "not sent again")
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:missed"))
	es := events(t, b.pool, "k:missed")
	require.Contains(t, es[len(es)-1].Detail["reason"], "was never seen at the venue; not re-sent")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome = 'failed'"),
		"the order's fate is unknown: the key is not freed")
	require.Equal(t, 1.0, counterOf(t, metrics.Reconciles, "missed"))
	requireLogged(t, logs, slog.LevelError, "reconcile: order never seen at a venue that may fill late; not re-sent",
		map[string]any{"trace_id": "k:missed"})
}

// B7: the sweeper does not free a dead attempt's key when its order is not
// at a venue that may still fill it late: it creates the trace failed, so
// a resend is a duplicate instead of a second order.
func TestSweeperKeepsTheKeyOfAnOrderAVenueMayFillLate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": mayFillLate{windowed{b.paper, time.Millisecond}}})
	seedIntent(t, b.pool, "k:swept-late", reconcileOrder, time.Now().Add(-time.Second), "")
	sw := newSweeper(t, b)

	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:swept-late"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome = 'failed'"))
	es := events(t, b.pool, "k:swept-late")
	require.Contains(t, es[len(es)-1].Detail["reason"], "was never seen at the venue; not re-sent")
}
