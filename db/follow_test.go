package db_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// Followers of one order racing (two replicas, a duplicate delivery) ask
// the venue one at a time under the row lock, and the change is recorded
// once: the others find the order no longer open and ask nothing.
func TestFollowOrderRecordsAChangeOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: "k:race", Status: db.TraceDispatched})
	o := testfactory.Order(t, pool, testfactory.OrderOpts{TraceID: "k:race", Status: exchange.StatusOpen, OrderType: "limit",
		Quantity: "1", Price: "10"})

	var asked atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			_, err := db.FollowOrder(ctx, pool, o.ClientOrderID, 10*time.Second, func(ctx context.Context, st db.FollowState) (db.FollowStep, error) {
				asked.Add(1)
				require.True(t, st.TraceExists)
				time.Sleep(20 * time.Millisecond) // the venue request, under the lock
				u := db.OrderUpdate{Status: exchange.StatusFilled, FilledQuantity: decimal.NewFromInt(1),
					AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(10))}
				return db.FollowStep{Update: &u, Events: []db.Event{{TraceID: "k:race", Event: db.EventOrderFilled}}}, nil
			})
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, asked.Load(), "only the first follower asked the venue")
	var events, filled int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM trace_history WHERE event = 'order_filled'").Scan(&events))
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM orders WHERE status = 'filled' AND final_at IS NOT NULL").Scan(&filled))
	require.Equal(t, 1, events)
	require.Equal(t, 1, filled)
}
