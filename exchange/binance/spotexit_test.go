package binance_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
)

// loneExit is a resolved lone spot exit of a 1 ETH buy at 3000 (ETHUSDT:
// tick 0.01, step 0.01).
func loneExit(id, role string, a exchange.Attached) exchange.Order {
	o := exchange.Order{ClientOrderID: id, Symbol: "ETHUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("1"), Exit: role, ReduceOnly: true}
	switch role {
	case exchange.RoleTakeProfit:
		o.TakeProfit = &a
	case exchange.RoleStopLoss:
		o.StopLoss = &a
	default:
		o.TrailingStop = &a
	}
	return o
}

func price(s string) exchange.Attached { return exchange.Attached{Price: decimal.NewNullDecimal(d(s))} }

// A lone spot take-profit is a LIMIT_MAKER sell at its price, a lone
// stop-loss a STOP_LOSS sell at its stopPrice, a trailing stop a STOP_LOSS
// with trailingDelta in BIPS (1.255 % → 125, rounded down): each one plain
// order under the leg's client order ID, found again by it with its
// target, cancelled by it (again: answered by the lookup). An order held
// under the ID with another trigger is not adopted.
func TestSpotLoneExitPlaceLookupCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetBalance("ETH", d("1"))
	pct := exchange.Attached{Percent: decimal.NewNullDecimal(d("1.255"))}
	for _, tc := range []struct {
		o                  exchange.Order
		typ, trigger, rate string
	}{
		{loneExit(newID(), exchange.RoleTakeProfit, price("3300")), "LIMIT_MAKER", "3300", ""},
		{loneExit(newID(), exchange.RoleStopLoss, price("2700")), "STOP_LOSS", "2700", ""},
		{loneExit(newID(), exchange.RoleTrailingStop, pct), "STOP_LOSS", "", "1.25"},
	} {
		o := tc.o
		_, err := b.venue.Lookup(ctx, o)
		require.ErrorIs(t, err, exchange.ErrNotFound)
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err, tc.typ)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
		held := b.fake.Orders()[len(b.fake.Orders())-1]
		require.Equal(t, o.ClientOrderID, held.ClientOrderID)
		require.Equal(t, tc.typ, held.Type)
		require.Equal(t, "SELL", held.Side)
		switch {
		case tc.rate != "":
			require.EqualValues(t, 125, held.TrailingDelta)
			require.True(t, held.StopPrice.IsZero(), "trails from the next trade")
			require.Equal(t, tc.rate, r.CallbackRate.Decimal.String())
		case tc.typ == "LIMIT_MAKER":
			require.Equal(t, tc.trigger, held.Price.String())
			require.Equal(t, tc.trigger, r.TakeProfit.Decimal.String())
		default:
			require.Equal(t, tc.trigger, held.StopPrice.String())
			require.Equal(t, tc.trigger, r.StopLoss.Decimal.String())
		}

		found, err := b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, found.Status)
		require.Equal(t, r.ExchangeOrderID, found.ExchangeOrderID)
		require.Equal(t, r.TakeProfit, found.TakeProfit)
		require.Equal(t, r.StopLoss, found.StopLoss)

		c, err := b.venue.Cancel(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusCancelled, c.Status, "cancelled, not rejected")
		again, err := b.venue.Cancel(ctx, o)
		require.NoError(t, err, "cancelling again is answered by the lookup")
		require.Equal(t, exchange.StatusCancelled, again.Status)
	}

	// The same ID held with another trigger is not adopted.
	o := loneExit(newID(), exchange.RoleStopLoss, price("2700"))
	_, err := b.venue.Place(ctx, o)
	require.NoError(t, err)
	other := loneExit(o.ClientOrderID, exchange.RoleStopLoss, price("2600"))
	_, err = b.venue.Lookup(ctx, other)
	require.ErrorIs(t, err, exchange.ErrMismatch)
}

// A lone spot exit the symbol's rules refuse is rejected before anything
// is sent: a quantity below the step's minimum; and Binance's own refusal
// of a stop the price already passed (-2010 "Order would trigger
// immediately.") is a refusal for good.
func TestSpotLoneExitRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketSpot)
	b.fake.SetBalance("ETH", d("1"))
	small := loneExit(newID(), exchange.RoleStopLoss, price("2700"))
	small.Quantity = d("0.005")
	r, err := b.venue.Place(ctx, small)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "below the minimum")
	require.Zero(t, b.fake.Requests("/api/v3/order"), "nothing sent")

	r, err = b.venue.Place(ctx, loneExit(newID(), exchange.RoleStopLoss, price("3100")))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Equal(t, "Order would trigger immediately.", r.Reason)
	require.Empty(t, b.fake.Orders())
}
