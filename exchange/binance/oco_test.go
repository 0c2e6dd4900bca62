package binance_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// ocoExit is a resolved OCO exit of a 1 ETH buy at 3000.
func ocoExit(id string) exchange.Order {
	tp := exchange.Attached{Price: decimal.NewNullDecimal(d("3300"))}
	sl := exchange.Attached{Price: decimal.NewNullDecimal(d("2700"))}
	return exchange.Order{ClientOrderID: id, Symbol: "ETHUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("1"), Exit: exchange.RoleOCO, TakeProfit: &tp, StopLoss: &sl}
}

// The spot OCO exit is one order list under the leg's client order ID,
// found again by it (GET /api/v3/orderList) and cancelled by it (DELETE
// /api/v3/orderList); cancelling again answers from the lookup, which asks
// the finished list's orders whether one executed (cancelled, not filled).
// A list held under the ID with other orders is not adopted; none is
// ErrNotFound.
func TestSpotOCOPlaceLookupCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetBalance("ETH", d("1"))
	o := ocoExit(newID())

	_, err := b.venue.Lookup(ctx, o)
	require.ErrorIs(t, err, exchange.ErrNotFound)
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Equal(t, "3300", r.TakeProfit.Decimal.String())
	lists := b.fake.OrderLists()
	require.Len(t, lists, 1)
	require.Equal(t, o.ClientOrderID, lists[0].ListClientOrderID)
	require.Equal(t, o.ClientOrderID+"tp", lists[0].Above.ClientOrderID)

	held, err := b.venue.Lookup(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, held.Status)
	require.Equal(t, r.ExchangeOrderID, held.ExchangeOrderID)

	c, err := b.venue.Cancel(ctx, o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, c.Status)
	again, err := b.venue.Cancel(ctx, o)
	require.NoError(t, err, "cancelling again is answered by the lookup")
	require.Equal(t, exchange.StatusCancelled, again.Status, "a list cancelled as a whole executed nothing")
	require.Len(t, b.fake.OrderLists(), 1)

	// Another list under the same ID (its orders are not the derived
	// ones) is not adopted.
	other := newID()
	b.fake.ExpireList(o.ClientOrderID)
	_, err = b.venue.Place(ctx, ocoExit(other))
	require.NoError(t, err)
	mismatch := ocoExit(other)
	mismatch.Symbol = "BTCUSDT"
	_, err = b.venue.Lookup(ctx, mismatch)
	require.ErrorIs(t, err, exchange.ErrMismatch)
}
