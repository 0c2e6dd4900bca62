package okx_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// trailingExit is the leg hoox places for a long's 1.5 % trailing stop.
func trailingExit(id, qty, percent string) exchange.Order {
	return exchange.Order{ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d(qty), Exit: exchange.RoleTrailingStop,
		TrailingStop: &exchange.Attached{Percent: decimal.NewNullDecimal(d(percent))}}
}

// A trailing stop goes to OKX as a reduce-only move_order_stop algo order
// trailing by callbackRatio = percent / 100, sized in contracts; it is
// found again by its algoClOrdId only with the same ratio (another ratio
// under the ID is not adopted), and the cancel action reaches it through
// the algo cancel endpoint, idempotently.
func TestTrailingStopIsPlacedLookedUpAndCancelledAsAnAlgoOrder(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("3")) // 0.03 BTC long
	o := trailingExit("hxokxtrail1", "0.03", "1.5")

	r, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	require.Equal(t, "1.5", r.CallbackRate.Decimal.String())
	algos := fake.AlgoOrders()
	require.Len(t, algos, 1)
	require.Equal(t, "move_order_stop", algos[0].OrdType)
	require.Equal(t, "0.015", algos[0].CallbackRatio.String())
	require.Equal(t, "3", algos[0].Sz.String(), "0.03 BTC is 3 contracts of 0.01")
	require.True(t, algos[0].ReduceOnly)
	require.Equal(t, "hxokxtrail1", algos[0].AlgoClOrdID)
	require.Empty(t, fake.Orders(), "no plain order")

	got, err := v.Lookup(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, got.Status)
	require.Equal(t, algos[0].AlgoID, got.ExchangeOrderID)
	require.Equal(t, "0.03", got.Quantity.String())
	require.Equal(t, "1.5", got.CallbackRate.Decimal.String())

	_, err = v.Lookup(ctx(t), trailingExit("hxokxtrail1", "0.03", "2"))
	require.ErrorIs(t, err, exchange.ErrMismatch, "another ratio under the ID is not this stop")
	_, err = v.Lookup(ctx(t), trailingExit("hxokxtrail9", "0.03", "1.5"))
	require.ErrorIs(t, err, exchange.ErrNotFound)

	_, err = v.Place(ctx(t), o)
	require.Error(t, err, "a second placement under the live ID is refused (51065), never a second stop")
	require.Len(t, fake.AlgoOrders(), 1)

	c, err := v.Cancel(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusCancelled, c.Status)
	require.Equal(t, "canceled", fake.AlgoOrders()[0].State)
	c, err = v.Cancel(ctx(t), o)
	require.NoError(t, err, "cancelling again is answered by the lookup")
	require.Equal(t, exchange.StatusCancelled, c.Status)

	require.False(t, v.RefusesLateRequest(o), "no expTime on the algo endpoint: a missing stop is never re-sent")
	require.True(t, v.RefusesLateRequest(order("hxokxentry", "BTCUSDT", "buy", "0.01")))
}

// OKX's refusal of the ratio (51257) rejects the stop for good.
func TestTrailingStopOutsideOKXsRangeIsRejected(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("3"))
	r, err := v.Place(ctx(t), trailingExit("hxokxtrail2", "0.03", "99.999999999"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "callback rate")
	require.Empty(t, fake.AlgoOrders())
}

// A trailing stop OKX booked but whose answer was lost (a proxy's 502) is
// an unknown outcome, never "nothing was sent": the lookup by its
// algoClOrdId then finds it, so the leg runner adopts it rather than
// sending a second stop.
func TestTrailingStopWithALostAnswerIsUnknownAndFoundByItsID(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("3"))
	o := trailingExit("hxokxtrail3", "0.03", "1")
	fake.LoseNextAlgo()
	_, err := v.Place(ctx(t), o)
	require.Error(t, err)
	require.NotErrorIs(t, err, exchange.ErrUnreachable, "the stop may exist")
	require.Len(t, fake.AlgoOrders(), 1, "OKX booked it")
	got, err := v.Lookup(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, got.Status)
	require.Equal(t, fake.AlgoOrders()[0].AlgoID, got.ExchangeOrderID)
}

// A trailing stop given as a price distance goes out as callbackSpread,
// rounded down to the tick (a tighter stop); the lookup compares the
// spread, and the report carries it as TrailingDistance.
func TestTrailingStopByDistanceIsSentAsCallbackSpread(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("-3")) // 0.03 BTC short
	o := exchange.Order{ClientOrderID: "hxokxtrail4", Symbol: "BTCUSDT", Action: "close", Side: "buy", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.03"), Exit: exchange.RoleTrailingStop,
		TrailingStop: &exchange.Attached{Distance: decimal.NewNullDecimal(d("250.37"))}}
	r, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	require.Equal(t, "250.3", r.TrailingDistance.Decimal.String(), "down to the 0.1 tick")
	require.False(t, r.CallbackRate.Valid)
	algos := fake.AlgoOrders()
	require.Len(t, algos, 1)
	require.Equal(t, "250.3", algos[0].CallbackSpread.String())
	require.True(t, algos[0].CallbackRatio.IsZero())
	require.Equal(t, "buy", algos[0].Side, "a short's stop buys back")

	got, err := v.Lookup(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, "250.3", got.TrailingDistance.Decimal.String())
	other := o
	other.TrailingStop = &exchange.Attached{Distance: decimal.NewNullDecimal(d("300"))}
	_, err = v.Lookup(ctx(t), other)
	require.ErrorIs(t, err, exchange.ErrMismatch, "another spread under the ID is not this stop")

	tiny := o
	tiny.ClientOrderID = "hxokxtrail5"
	tiny.TrailingStop = &exchange.Attached{Distance: decimal.NewNullDecimal(d("0.05"))}
	r, err = v.Place(ctx(t), tiny)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status, "a distance below the tick is never sent as zero")
	require.Len(t, fake.AlgoOrders(), 1)
}
