package paper_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/pgtest"
)

type testBundle struct {
	venue *paper.Venue
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	return &testBundle{venue: paper.New(paper.Config{Pool: pgtest.NewPool(t)})}
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func market(id, side, qty string) exchange.Order {
	return exchange.Order{
		ClientOrderID: id, Symbol: "BTCUSDT", Action: side, Side: side,
		OrderType: "market", Quantity: dec(qty),
	}
}

func closeOrder(id, qty string) exchange.Order {
	return exchange.Order{
		ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", ReduceOnly: true,
		OrderType: "market", Quantity: dec(qty),
	}
}

func requireNoOrders(t *testing.T, v *paper.Venue) {
	t.Helper()
	orders, err := v.Orders(context.Background())
	require.NoError(t, err)
	require.Empty(t, orders)
}

func TestPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("MarketFillsAtReferencePrice", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, err := b.venue.Place(ctx, market("c1", "buy", "0.001"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "buy", r.Side)
		require.True(t, r.FillPrice.Valid)
		require.True(t, dec("100").Equal(r.FillPrice.Decimal), "fill price %s", r.FillPrice.Decimal)
		require.Regexp(t, `^paper-`, r.ExchangeOrderID)
		require.True(t, r.FilledQuantity.Equal(r.Quantity), "a full fill: filled %s of %s", r.FilledQuantity, r.Quantity)
		got, err := b.venue.Lookup(ctx, market("c1", "buy", "0.001"))
		require.NoError(t, err)
		require.True(t, dec("0.001").Equal(got.FilledQuantity), "lookup: filled %s", got.FilledQuantity)

		orders, err := b.venue.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, orders, 1)
		require.Equal(t, "c1", orders[0].ClientOrderID)
		require.True(t, dec("0.001").Equal(orders[0].Quantity))
		require.Equal(t, exchange.StatusFilled, orders[0].Status)
	})

	t.Run("MarketFillsAtGivenPriceExactly", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		o := market("c1", "sell", "1.000000000000000001")
		o.Price = decimal.NewNullDecimal(dec("65000.123456789012345678"))
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "65000.123456789012345678", r.FillPrice.Decimal.String())

		orders, err := b.venue.Orders(ctx)
		require.NoError(t, err)
		require.Equal(t, "1.000000000000000001", orders[0].Quantity.String(), "quantities must not round through a float")
	})

	t.Run("ConfiguredReferencePrice", func(t *testing.T) {
		t.Parallel()
		v := paper.New(paper.Config{Pool: pgtest.NewPool(t), ReferencePrice: dec("42.5")})
		r, err := v.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		require.True(t, dec("42.5").Equal(r.FillPrice.Decimal))
	})

	t.Run("LimitRests", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		o := market("c1", "buy", "2")
		o.OrderType, o.Price = "limit", decimal.NewNullDecimal(dec("50"))
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)
		require.False(t, r.FillPrice.Valid)
		require.NotEmpty(t, r.ExchangeOrderID)
		require.True(t, r.FilledQuantity.IsZero(), "a resting limit has filled nothing")

		got, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, r.ExchangeOrderID, got.ExchangeOrderID)
		require.Equal(t, exchange.StatusOpen, got.Status)
		require.True(t, got.Quantity.Equal(dec("2")), "lookup reports the quantity held, got %s", got.Quantity)
		require.True(t, got.Price.Decimal.Equal(dec("50")), "lookup reports the limit price held, got %s", got.Price.Decimal)
		require.True(t, got.FilledQuantity.IsZero(), "lookup: a resting limit has filled nothing")
	})

	t.Run("LimitWithoutPriceRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		o := market("c1", "buy", "2")
		o.OrderType = "limit"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, paper.ReasonLimitWithoutPrice, r.Reason)
		requireNoOrders(t, b.venue)
	})

	t.Run("InvalidSymbolRejectedForGood", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		o := market("c1", "buy", "1")
		o.Symbol = "INVALIDUSDT"
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.Report{Status: exchange.StatusRejected, Reason: "unknown symbol"}, r)
		requireNoOrders(t, b.venue)
		_, err = b.venue.Lookup(ctx, o)
		require.ErrorIs(t, err, exchange.ErrNotFound, "a venue keeps no order it refused")
	})

	t.Run("SameClientOrderIDIsDuplicate", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		first, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		_, err = b.venue.Place(ctx, market("c1", "buy", "1"))
		require.ErrorIs(t, err, exchange.ErrDuplicateClientOrderID)

		orders, err := b.venue.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, orders, 1)
		require.Equal(t, first.ExchangeOrderID, orders[0].ExchangeOrderID)
	})

	t.Run("LiveAndTestBooksStayApart", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		o := closeOrder("c2", "1")
		o.Test = true
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status, "a live position must not be closable from the test book")
	})
}

func TestLookup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	placed, err := b.venue.Place(ctx, market("c1", "sell", "3"))
	require.NoError(t, err)
	got, err := b.venue.Lookup(ctx, market("c1", "sell", "3"))
	require.NoError(t, err)
	require.Equal(t, placed.ExchangeOrderID, got.ExchangeOrderID)
	require.Equal(t, "sell", got.Side)
	require.Equal(t, exchange.StatusFilled, got.Status)
	require.True(t, placed.FillPrice.Decimal.Equal(got.FillPrice.Decimal))

	_, err = b.venue.Lookup(ctx, market("nope", "sell", "3"))
	require.ErrorIs(t, err, exchange.ErrNotFound)

	// The same client order ID asked for another order: a reused key,
	// never an adoption.
	for _, other := range []exchange.Order{market("c1", "buy", "3"), market("c1", "sell", "4")} {
		_, err = b.venue.Lookup(ctx, other)
		require.ErrorIs(t, err, exchange.ErrMismatch)
	}
	wrongSymbol := market("c1", "sell", "3")
	wrongSymbol.Symbol = "ETHUSDT"
	_, err = b.venue.Lookup(ctx, wrongSymbol)
	require.ErrorIs(t, err, exchange.ErrMismatch)
}

func TestClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("FlatIsRejectedAndNotStored", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		r, err := b.venue.Place(ctx, closeOrder("c1", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, paper.ReasonNoPosition, r.Reason)
		requireNoOrders(t, b.venue)
	})

	t.Run("LongIsSold", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "buy", "1.5"))
		require.NoError(t, err)
		r, err := b.venue.Place(ctx, closeOrder("c1", "1.5"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "sell", r.Side)
		require.True(t, dec("1.5").Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)

		// Flat again: a second close has nothing to close.
		r, err = b.venue.Place(ctx, closeOrder("c2", "1.5"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
	})

	t.Run("ShortIsBought", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "sell", "2"))
		require.NoError(t, err)
		r, err := b.venue.Place(ctx, closeOrder("c1", "2"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "buy", r.Side)
	})

	t.Run("FlattensWhateverItsQuantitySays", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "buy", "4"))
		require.NoError(t, err)
		// A close of more than the position (a template's "25" from
		// "25%") closes it, never flips it.
		r, err := b.venue.Place(ctx, closeOrder("c1", "25"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
		require.Equal(t, "4", r.Quantity.String())
		_, err = b.venue.Place(ctx, market("o2", "buy", "4"))
		require.NoError(t, err)
		r, err = b.venue.Place(ctx, closeOrder("c2", "1"))
		require.NoError(t, err)
		require.Equal(t, "4", r.Quantity.String(), "the whole position, not the quantity sent")
		r, err = b.venue.Place(ctx, closeOrder("c3", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, paper.ReasonNoPosition, r.Reason)
	})

	t.Run("AShareMoreThanThePositionIsRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
		require.NoError(t, err)
		share := closeOrder("c1", "2")
		share.Side, share.Partial = "sell", true
		r, err := b.venue.Place(ctx, share)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, paper.ReasonExceedsPosition, r.Reason)
	})

	t.Run("CloseLongWhenShortIsRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "sell", "1"))
		require.NoError(t, err)
		o := market("c1", "sell", "1")
		o.Action, o.ReduceOnly = "close_long", true
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, paper.ReasonNoPosition, r.Reason)

		o = market("c2", "buy", "1")
		o.Action, o.ReduceOnly = "close_short", true
		r, err = b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})

	t.Run("ReusedIDIsDuplicateNotNoPosition", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
		require.NoError(t, err)
		_, err = b.venue.Place(ctx, closeOrder("c1", "1"))
		require.NoError(t, err)
		// A retry of the close must adopt it, not be told there is nothing
		// to close.
		_, err = b.venue.Place(ctx, closeOrder("c1", "1"))
		require.ErrorIs(t, err, exchange.ErrDuplicateClientOrderID)
	})

	t.Run("ConcurrentClosesSellOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.venue.Place(ctx, market("o1", "buy", "1"))
		require.NoError(t, err)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			filled int
		)
		for i := range 10 {
			wg.Go(func() {
				r, err := b.venue.Place(ctx, closeOrder(fmt.Sprintf("c%d", i), "1"))
				if err == nil && r.Status == exchange.StatusFilled {
					mu.Lock()
					filled++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		require.Equal(t, 1, filled, "a reduce-only close must never flip the position")
	})
}

func TestFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("Reject", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.venue.SetFaults(paper.Faults{Reject: "no balance"})
		r, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, "no balance", r.Reason)
		requireNoOrders(t, b.venue)

		b.venue.SetFaults(paper.Faults{})
		r, err = b.venue.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status, "clearing the fault must restore normal fills")
	})

	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.venue.SetFaults(paper.Faults{Unreachable: true})
		_, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		_, err = b.venue.Lookup(ctx, market("c1", "buy", "1"))
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		b.venue.SetFaults(paper.Faults{})
		requireNoOrders(t, b.venue)
	})

	t.Run("LoseAnswer", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.venue.SetFaults(paper.Faults{LoseAnswer: true})
		_, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

		r, err := b.venue.Lookup(ctx, market("c1", "buy", "1"))
		require.NoError(t, err, "the order was taken even though the answer was lost")
		require.Equal(t, exchange.StatusFilled, r.Status)

		// What the gateway does on retry: adopt, never place twice.
		b.venue.SetFaults(paper.Faults{})
		adoptedReport, adopted, err := exchange.PlaceOrAdopt(ctx, b.venue, market("c1", "buy", "1"), false)
		require.NoError(t, err)
		require.True(t, adopted)
		require.Equal(t, r.ExchangeOrderID, adoptedReport.ExchangeOrderID)
		orders, err := b.venue.Orders(ctx)
		require.NoError(t, err)
		require.Len(t, orders, 1)
	})

	t.Run("DelayHonoursContext", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.venue.SetFaults(paper.Faults{Delay: time.Hour})
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := b.venue.Place(cctx, market("c1", "buy", "1"))
		require.ErrorIs(t, err, exchange.ErrUnreachable)
		requireNoOrders(t, b.venue)
	})

	t.Run("DelayThenFills", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.venue.SetFaults(paper.Faults{Delay: 20 * time.Millisecond})
		r, err := b.venue.Place(ctx, market("c1", "buy", "1"))
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

func TestConcurrentSameClientOrderID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)

	const n = 50
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = b.venue.Place(ctx, market("same", "buy", "1"))
		})
	}
	wg.Wait()

	placed := 0
	for _, err := range errs {
		if err == nil {
			placed++
			continue
		}
		require.ErrorIs(t, err, exchange.ErrDuplicateClientOrderID)
	}
	require.Equal(t, 1, placed)
	orders, err := b.venue.Orders(ctx)
	require.NoError(t, err)
	require.Len(t, orders, 1)
}
