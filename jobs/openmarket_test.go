package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// stillWorking is a venue holding every looked-up order, open (a Binance
// market order answered NEW or PARTIALLY_FILLED, still executing) until
// done is set, then filled.
type stillWorking struct {
	exchange.Venue
	done atomic.Bool
}

func (v *stillWorking) Lookup(_ context.Context, o exchange.Order) (exchange.Report, error) {
	r := exchange.Report{ExchangeOrderID: "bn-1", Symbol: o.Symbol, Side: o.Side, Quantity: o.Quantity,
		Status: exchange.StatusOpen, FilledQuantity: o.Quantity.Div(decimal.NewFromInt(2))}
	if v.done.Load() {
		r.Status, r.FilledQuantity = exchange.StatusFilled, o.Quantity
	}
	return r, nil
}

func (v *stillWorking) AcceptWindow() time.Duration { return time.Millisecond }

// B7: a market order the venue still reports open is not settled as
// final: the reconcile keeps following it and records what executed once
// it is done. A limit order reported open is recorded open, as before.
func TestReconcileFollowsAMarketOrderStillOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	venue := &stillWorking{Venue: b.paper}
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": venue})
	args := seedReconciling(t, b.pool, "k:working", reconcileOrder, time.Now())
	w := newTestWorker(t, b)

	res, err := w.Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "still executing: look again later")
	require.Equal(t, db.TraceReconciling, traceStatus(t, b.pool, "k:working"))

	venue.done.Store(true)
	res, err = w.Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:working"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE status = 'filled' AND filled_quantity = 2"))

	limit := reconcileOrder
	limit.ClientOrderID, limit.OrderType, limit.Price = "hxrecoverylimit000000000000000a", "limit", decimal.NewNullDecimal(decimal.NewFromInt(100))
	venue.done.Store(false)
	largs := seedReconciling(t, b.pool, "k:resting", limit, time.Now())
	res, err = w.Work(ctx, t, beginTx(t, b.pool), largs, nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:resting"), "a resting limit order is recorded open")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE status = 'open'"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'follow' AND args->>'trace_id' = 'k:resting'"),
		"and followed from the reconcile's commit on (issue 19)")
	require.EqualValues(t, 0, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'follow' AND args->>'trace_id' = 'k:working'"),
		"a filled order needs no follow")
}

// B7: the sweeper leaves a dead attempt's market order that is still open
// for a later sweep, and records it once it has executed.
func TestSweeperFollowsAMarketOrderStillOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	venue := &stillWorking{Venue: b.paper}
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": venue})
	seedIntent(t, b.pool, "k:swept-working", reconcileOrder, time.Now().Add(-time.Second), "")
	sw := newSweeper(t, b)

	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "still executing: left for the next sweep")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))

	venue.done.Store(true)
	n, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, "k:swept-working"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE status = 'filled' AND filled_quantity = 2"))
}
