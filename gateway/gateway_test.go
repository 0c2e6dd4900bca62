package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }

type testBundle struct {
	url string
	// pool is the claims', markers the intents', paperPool the paper
	// venue's.
	pool, markers, paperPool *pgxpool.Pool
	paper                    *paper.Venue
	svc                      *gateway.Service
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewDatabase(t)
	open := func() *pgxpool.Pool { return pgtest.OpenPool(t, url) }
	b := &testBundle{url: url, pool: open(), markers: open(), paperPool: open()}
	b.paper = paper.New(paper.Config{Pool: b.paperPool})
	b.svc = gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: b.markers,
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"paper": b.paper})})
	return b
}

func input(t *testing.T, body string) gateway.Input {
	t.Helper()
	in, err := gateway.ParseInput([]byte(body), "", time.Now())
	require.NoError(t, err)
	return in
}

func count(t *testing.T, pool *pgxpool.Pool, query string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query).Scan(&n))
	return n
}

func TestUnknownExchangeIsInvalidAndTouchesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.svc.Execute(context.Background(), input(t, `{"exchange":"nowhere","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"x"}`))
	var ge *gateway.Error
	require.True(t, errors.As(err, &ge))
	require.Equal(t, codes.InvalidSignal, ge.Code)
	require.Contains(t, ge.Detail, "paper", "the detail names the configured venues")
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
}

// A repeat is answered before its audit row commits; Close is what waits
// for those rows, so shutdown loses none.
func TestCloseWaitsForRepeatAuditRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	const n = 20
	body := `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"repeat-me"}`
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	for range n {
		_, err := b.svc.Execute(ctx, input(t, body))
		var ge *gateway.Error
		require.True(t, errors.As(err, &ge))
		require.Equal(t, codes.Duplicate, ge.Code)
		require.Equal(t, out.Order.ID, *ge.Original.OrderID)
	}
	b.svc.Close()
	require.Equal(t, n, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'duplicate'"))
}

// The venue's refusal keeps the trace, records a rejected order and
// returns it with the error, so the sender sees why.
func TestRejectionIsRecordedAndReturned(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.paper.SetFaults(paper.Faults{Reject: "insufficient balance"})
	_, err := b.svc.Execute(context.Background(), input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"broke"}`))
	var ge *gateway.Error
	require.True(t, errors.As(err, &ge))
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "insufficient balance")
	require.Equal(t, "rejected", ge.Outcome.Order.Status)
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE status = 'rejected'"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE status = 'rejected' AND reject_reason = 'insufficient balance'"))
}
