package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// spotPaper is the paper venue presented as a spot venue, so its fills
// count in the strategy's spot ledger as a real spot venue's do.
type spotPaper struct{ *paper.Venue }

func (spotPaper) SpotSymbol(_ context.Context, symbol string) (string, string, bool, error) {
	return symbol, "BTC", true, nil
}

var _ exchange.SpotTrader = spotPaper{}

func setupSpot(t *testing.T) *testBundle {
	t.Helper()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": spotPaper{b.paper}})
	return b
}

func held(t *testing.T, b *testBundle, strategy string) string {
	t.Helper()
	var q decimal.Decimal
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT coalesce((SELECT quantity FROM spot_ledger
		WHERE exchange = 'paper' AND mode = 'live' AND symbol = 'BTCUSDT' AND strategy = $1), 0)`, strategy).Scan(&q))
	return q.String()
}

const spotBuy = `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.25","strategy":"dca","trace_id":"spot-buy"}`

// A fill that a dead attempt left unrecorded counts once in the ledger
// when the sweeper records it, and again never: not by a later resend
// (a duplicate), not by a second sweep.
func TestSweptFillCountsOnceInTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSpot(t)
	gw := crashingGateway(t, b, nil)
	require.Panics(t, func() { _, _ = gw.Execute(ctx, input(t, spotBuy)) })
	require.Equal(t, "0", held(t, b, "dca"), "nothing recorded yet")

	sw := newSweeper(t, b)
	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, "0.25", held(t, b, "dca"))

	_, err = gw.Execute(ctx, input(t, spotBuy))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Duplicate, ge.Code)
	n, err = sw.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, "0.25", held(t, b, "dca"), "counted once")
}

// A resend after a crash adopts the dead attempt's order: its fill counts
// once.
func TestAdoptedFillCountsOnceInTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSpot(t)
	gw := crashingGateway(t, b, nil)
	require.Panics(t, func() { _, _ = gw.Execute(ctx, input(t, spotBuy)) })

	out, err := gw.Execute(ctx, input(t, spotBuy))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Contains(t, eventNames(events(t, b.pool, "k:spot-buy")), "adopted")
	require.Equal(t, "0.25", held(t, b, "dca"))

	n, err := newSweeper(t, b).Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "nothing left for the sweeper")
	require.Equal(t, "0.25", held(t, b, "dca"), "counted once")
}

// A fill whose answer was lost counts once when the reconcile job
// records it; the sweeper, run after, finds nothing to count again.
func TestReconciledFillCountsOnceInTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupSpot(t)
	// The client queues the reconcile now and works it only once started,
	// after the ledger is read: started at once, it could record the fill
	// before the read (seen on a busy machine).
	client := newClient(t, b, jobs.Config{})
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: b.venues, Jobs: client})
	t.Cleanup(gw.Close)
	b.paper.SetFaults(paper.Faults{LoseAnswer: true})
	out, err := gw.Execute(ctx, input(t, spotBuy))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	b.paper.SetFaults(paper.Faults{})
	require.Equal(t, "0", held(t, b, "dca"), "not known to have filled yet")
	start(t, client)

	require.Eventually(t, func() bool { return traceStatus(t, b.pool, "k:spot-buy") == db.TraceDispatched },
		time.Minute, 20*time.Millisecond, "the reconcile never recorded the order")
	require.Equal(t, "0.25", held(t, b, "dca"))

	n, err := newSweeper(t, b).Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, "0.25", held(t, b, "dca"), "counted once")
}
