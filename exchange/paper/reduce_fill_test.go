package paper_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
)

// limitClose is a reduce-only close resting at price.
func limitClose(id, qty, price string) exchange.Order {
	o := closeOrder(id, qty)
	o.OrderType, o.Price = "limit", decimal.NewNullDecimal(dec(price))
	return o
}

// bookPosition is the net position the paper book holds, from what each
// order executed as Lookup reports it.
func bookPosition(t *testing.T, v *paper.Venue) decimal.Decimal {
	t.Helper()
	ctx := context.Background()
	orders, err := v.Orders(ctx)
	require.NoError(t, err)
	pos := decimal.Zero
	for _, o := range orders {
		// Looked up as a close: any side and quantity matches.
		r, err := v.Lookup(ctx, exchange.Order{ClientOrderID: o.ClientOrderID, Symbol: o.Symbol, Action: "close"})
		require.NoError(t, err)
		if r.Side == "buy" {
			pos = pos.Add(r.FilledQuantity)
		} else {
			pos = pos.Sub(r.FilledQuantity)
		}
	}
	return pos
}

// A plain order placed after a resting reduce-only close is not checked
// against it (only reducing orders reserve), so it may shrink, close or
// flip the position the close was placed against. When a price then
// crosses the close, it fills at most what is left of the position on its
// reducing side, as Binance USDⓈ-M and Bybit linear do, and ends
// cancelled for the rest (with nothing filled when nothing is left to
// reduce): a reduce-only order never grows a position nor opens the other
// side.
func TestReduceOnlyFillNeverFlipsThePosition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		// plain is the plain market sell placed after the close.
		plain string
		// filled is what the close executes; pos the book's position
		// after.
		filled, pos string
	}{
		{name: "ShrunkFillsWhatIsLeft", plain: "0.4", filled: "0.6", pos: "0"},
		{name: "FlatFillsNothing", plain: "1", filled: "0", pos: "0"},
		{name: "FlippedFillsNothing", plain: "2", filled: "0", pos: "-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
			require.NoError(t, err)
			r, err := b.venue.Place(ctx, limitClose("c1", "1", "110"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			r, err = b.venue.Place(ctx, market("s1", "sell", c.plain))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status, "a plain order is not checked against resting closes")

			n, err := b.venue.SetPrice(ctx, "BTCUSDT", false, dec("110"))
			require.NoError(t, err)

			got, err := b.venue.Lookup(ctx, limitClose("c1", "1", "110"))
			require.NoError(t, err)
			require.Equal(t, exchange.StatusCancelled, got.Status, "the rest of the close ends, as on a venue that cancels what a reduce-only order cannot reduce")
			require.Equal(t, "sell", got.Side)
			require.True(t, dec("1").Equal(got.Quantity), "the order keeps the quantity it was placed for: %s", got.Quantity)
			require.True(t, dec(c.filled).Equal(got.FilledQuantity), "filled %s, want %s", got.FilledQuantity, c.filled)
			require.False(t, got.FillPrice.Valid, "FillPrice is a full fill's, as on the other venues")
			if dec(c.filled).IsPositive() {
				require.Equal(t, int64(1), n, "the close executed")
				require.True(t, got.AvgPrice.Valid && dec("110").Equal(got.AvgPrice.Decimal), "what executed did at the limit: %v", got.AvgPrice)
			} else {
				require.Zero(t, n, "nothing executed")
				require.False(t, got.AvgPrice.Valid)
			}
			require.True(t, dec(c.pos).Equal(bookPosition(t, b.venue)), "position %s, want %s", bookPosition(t, b.venue), c.pos)
		})
	}
}

// Orders crossed by one price fill in the order they were placed, each
// reduce-only one against the position the earlier ones left: a plain buy
// placed before a resting buy-back of a short of 1 takes half of it, so
// the buy-back fills the other half and the book is flat, not long.
func TestReduceOnlyFillCountsEarlierFillsOfTheSamePrice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.venue.Place(ctx, market("s1", "sell", "1"))
	require.NoError(t, err)
	plain := market("b1", "buy", "0.5")
	plain.OrderType, plain.Price = "limit", decimal.NewNullDecimal(dec("95"))
	r, err := b.venue.Place(ctx, plain)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	r, err = b.venue.Place(ctx, limitClose("c1", "1", "90"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Equal(t, "buy", r.Side)

	n, err := b.venue.SetPrice(ctx, "BTCUSDT", false, dec("90"))
	require.NoError(t, err)
	require.Equal(t, int64(2), n)
	got, err := b.venue.Lookup(ctx, plain)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, got.Status)
	got, err = b.venue.Lookup(ctx, limitClose("c1", "1", "90"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, got.Status)
	require.True(t, dec("0.5").Equal(got.FilledQuantity), "filled %s", got.FilledQuantity)
	require.True(t, bookPosition(t, b.venue).IsZero(), "position %s", bookPosition(t, b.venue))

	// Flat now: a close finds nothing to close, the partial fill counted.
	r, err = b.venue.Place(ctx, closeOrder("c2", "0.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Equal(t, paper.ReasonNoPosition, r.Reason)
}

// A reduce-only close that the position still covers fills in full when
// crossed, as before.
func TestReduceOnlyFillWithinThePositionFillsInFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.venue.Place(ctx, market("o1", "buy", "2"))
	require.NoError(t, err)
	_, err = b.venue.Place(ctx, limitClose("c1", "1", "110"))
	require.NoError(t, err)
	_, err = b.venue.Place(ctx, market("s1", "sell", "0.5"))
	require.NoError(t, err)
	n, err := b.venue.SetPrice(ctx, "BTCUSDT", false, dec("111"))
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	got, err := b.venue.Lookup(ctx, limitClose("c1", "1", "110"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, got.Status)
	require.True(t, dec("1").Equal(got.FilledQuantity))
	require.True(t, got.FillPrice.Valid && dec("110").Equal(got.FillPrice.Decimal))
	require.True(t, dec("0.5").Equal(bookPosition(t, b.venue)))
}

// A close sized as 100 % of the position (percent_of_position) while
// another close rests closes the whole position: the resting close is
// cancelled first and listed, as hoox does on Binance USDⓈ-M for a close
// that flattens. A smaller share is refused instead, saying why and what
// is left: the resting close protects the part it would leave open.
func TestPercentCloseWhileACloseRests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
	require.NoError(t, err)
	_, err = b.venue.Place(ctx, limitClose("c1", "0.75", "110"))
	require.NoError(t, err)

	share := func(id, percent, qty string) exchange.Order {
		o := closeOrder(id, qty)
		o.Partial, o.Side = true, "sell"
		o.Sizing = &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: percent, Position: "1", Unrounded: qty, Quantity: qty}
		return o
	}
	r, err := b.venue.Place(ctx, share("c2", "50", "0.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, paper.ReasonExceedsPosition)
	require.Contains(t, r.Reason, "resting reduce-only sells already take 0.75 of the position of 1", r.Reason)
	require.Contains(t, r.Reason, "0.25 is left to close", r.Reason)
	require.Contains(t, r.Reason, "50% of the position", r.Reason)

	r, err = b.venue.Place(ctx, share("c3", "100", "1"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Len(t, r.CancelledFirst, 1)
	require.Equal(t, "c1", r.CancelledFirst[0].ClientOrderID)
	require.Equal(t, "0.75", r.CancelledFirst[0].Remaining)
	require.True(t, bookPosition(t, b.venue).IsZero(), "the whole long is closed")
	got, err := b.venue.Lookup(ctx, limitClose("c1", "0.75", "110"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, got.Status)

	// The cancelled close never fills afterwards: nothing flips short.
	_, err = b.venue.SetPrice(ctx, "BTCUSDT", false, dec("111"))
	require.NoError(t, err)
	require.True(t, bookPosition(t, b.venue).IsZero())
}
