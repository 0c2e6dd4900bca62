package paper_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
)

// A close is reduce-only: the paper venue refuses a share of the position
// "when the order would flip" it. A resting limit close takes its part of
// the position when a price crosses it, so a share of the same long,
// placed while the first rests, is refused as exceeding the position; the
// crossing price then fills the resting one and the book is flat, never
// short. (A close of the whole position cancels the resting one instead:
// TestPercentCloseWhileACloseRests.)
func TestCloseWhileALimitCloseRestsIsRefusedAndNeverFlipsThePosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
	require.NoError(t, err)

	limitClose := closeOrder("c1", "1")
	limitClose.OrderType, limitClose.Price = "limit", decimal.NewNullDecimal(dec("110"))
	r, err := b.venue.Place(ctx, limitClose)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)

	// A market close of a share of the same long while the limit close
	// rests.
	r, err = b.venue.Place(ctx, shareClose("c2", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Equal(t, paper.ReasonExceedsPosition+": resting reduce-only sells already take 1 of the position of 1, so 0 is left to close and this close asks 1; "+
		"paper cancels resting closes only for a close of the whole position: cancel them first", r.Reason, "the refusal says why")

	// A smaller one is refused too: the resting close takes all the long.
	r, err = b.venue.Place(ctx, shareClose("c3", "0.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)

	// A price crossing the resting close.
	_, err = b.venue.SetPrice(ctx, "BTCUSDT", false, dec("110"))
	require.NoError(t, err)

	orders, err := b.venue.Orders(ctx)
	require.NoError(t, err)
	pos := decimal.Zero
	for _, o := range orders {
		require.Equal(t, o.ClientOrderID == "c1", o.ReduceOnly, "only the close is marked reducing: %s", o.ClientOrderID)
		if o.Status != exchange.StatusFilled {
			continue
		}
		if o.Side == "buy" {
			pos = pos.Add(o.Quantity)
		} else {
			pos = pos.Sub(o.Quantity)
		}
	}
	require.False(t, pos.IsNegative(), "two reduce-only closes of a long of 1 left the paper book short %s", pos.Neg())
	require.True(t, pos.IsZero(), "the resting close filled and closed the long")
}

// A resting close reserves only its own quantity and side, and only while
// it rests: beside a resting buy-back of 1 of a short of 3, a share of 2 is
// accepted and a further one refused; once the resting one is cancelled,
// its quantity can be closed again.
func TestRestingCloseReservesItsQuantityUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	_, err := b.venue.Place(ctx, market("s1", "sell", "3"))
	require.NoError(t, err)
	limitClose := closeOrder("c1", "1")
	limitClose.OrderType, limitClose.Price = "limit", decimal.NewNullDecimal(dec("90"))
	r, err := b.venue.Place(ctx, limitClose)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Equal(t, "buy", r.Side)

	r, err = b.venue.Place(ctx, shareClose("c2", "2"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)
	r, err = b.venue.Place(ctx, shareClose("c3", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)

	_, err = b.venue.Cancel(ctx, limitClose)
	require.NoError(t, err)
	r, err = b.venue.Place(ctx, shareClose("c4", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, "the cancelled close no longer reserves the short")
}

// shareClose is a market close of qty, a share of the position
// (Partial), not all of it.
func shareClose(id, qty string) exchange.Order {
	o := closeOrder(id, qty)
	o.Partial = true
	return o
}
