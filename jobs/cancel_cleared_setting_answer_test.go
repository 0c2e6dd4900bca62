package jobs_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// A Bybit long E1 whose trailing stop took effect with its answer lost
// (leg L1 armed, unrecorded). The trader's cancel clears L1 itself
// (clearMarkedSettings) and records its order cancelled_by the cancel, in
// its own commit. The first answer lists it as cancelled, as the sender's
// retry of the same cancel (a duplicate, read from OrdersCancelledBy)
// does: the two answers to one signal agree on what it cancelled.
func TestCancelAnswerAndItsRepeatAgreeOnAClearedTrailingStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f, raw := bybitLinear(t) // BTCUSDT at 60000
	lose := &atomic.Bool{}
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": loseTrailing{Venue: raw, lose: lose, applied: true}})
	fb := followOn(t, b, venues, nil)

	lose.Store(true)
	e1, err := fb.gw.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":{"distance":600},"trace_id":"rv-trail-e1"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", e1.Order.Status)
	lose.Store(false)
	var l1 string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND role = 'trailing_stop' AND sent_at IS NOT NULL AND outcome IS NULL`, e1.Order.ClientOrderID).Scan(&l1))

	body := `{"exchange":"bybit","symbol":"BTCUSDT","action":"cancel","trace_id":"rv-trail-c"}`
	cl, err := fb.gw.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.True(t, f.TrailingStop("BTCUSDT").IsZero(), "the cancel cleared E1's trailing stop")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'cancelled' AND cancelled_by = $2`,
		l1, cl.TraceID), "L1 is recorded cancelled by the cancel")

	_, err = fb.gw.Execute(ctx, input(t, body))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Duplicate, ge.Code, ge.Detail)
	var first, repeat []string
	for _, o := range cl.Cancelled {
		first = append(first, o.ClientOrderID)
	}
	for _, o := range ge.Original.Cancelled {
		repeat = append(repeat, o.ClientOrderID)
	}
	require.ElementsMatch(t, repeat, first,
		"the first answer and its repeat must list the same cancelled orders (the repeat lists the cleared trailing stop %s)", l1)
}
