package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/timing"
	"github.com/hoox/hoox/jobs"
)

// skewed returns a clock off the system's by skew.
func skewed(skew time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(skew) }
}

func skewedWorker(t *testing.T, b *testBundle, skew time.Duration) *rivertest.Worker[jobs.ReconcileArgs, pgx.Tx] {
	t.Helper()
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{Timing: timing.Config{Now: skewed(skew)}}, b.venues, nil, jobs.NewMetrics(nil))
	return rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
}

// B2: a reconcile on a replica whose clock is off Postgres's by ±30 s
// decides as one in step: it waits while the accept window is open by
// Postgres's clock and places once it has closed (the signal's age, too,
// is Postgres's).
func TestReconcileIgnoresTheReplicasClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		t.Run("Open"+skew.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t)
			b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": windowed{b.paper, 10 * time.Second}})
			args := seedReconciling(t, b.pool, "k:skew-open", reconcileOrder, time.Now())
			res, err := skewedWorker(t, b, skew).Work(ctx, t, beginTx(t, b.pool), args, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "the window is open by Postgres's clock")
			require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, "k:skew-open"))
			fills, err := b.paper.Orders(ctx)
			require.NoError(t, err)
			require.Empty(t, fills)
		})
		t.Run("Closed"+skew.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t)
			b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": windowed{b.paper, time.Millisecond}})
			args := seedReconciling(t, b.pool, "k:skew-closed", reconcileOrder, time.Now().Add(-time.Second))
			res, err := skewedWorker(t, b, skew).Work(ctx, t, beginTx(t, b.pool), args, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind)
			require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:skew-closed"), "the window has closed and the signal is fresh: placed")
		})
	}
}

// B2: the sweeper on a skewed replica leaves a dead attempt's intent open
// while its accept window is open by Postgres's clock.
func TestSweeperIgnoresTheReplicasClock(t *testing.T) {
	t.Parallel()
	for _, skew := range []time.Duration{30 * time.Second, -30 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := setup(t)
			b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": windowed{b.paper, 10 * time.Second}})
			seedIntent(t, b.pool, "k:skew-swept", reconcileOrder, time.Now().Add(-time.Second), "")
			sw := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond, Timing: timing.Config{Now: skewed(skew)}}, b.venues, nil, nil)
			n, err := sw.Sweep(ctx)
			require.NoError(t, err)
			require.Zero(t, n, "not found inside the window proves nothing")
			require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))
		})
	}
}
