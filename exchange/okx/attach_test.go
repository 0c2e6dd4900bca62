package okx_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

func at(s string) *exchange.Attached {
	return &exchange.Attached{Price: decimal.NewNullDecimal(d(s))}
}

// A take-profit and a stop-loss go out on a swap entry in
// attachAlgoOrds, rounded to the tick (0.1) toward the entry, with market
// order prices; OKX lists them back, and a lookup adopts the order only
// with the same exits.
func TestAttachedTPSLOnTheOrder(t *testing.T) {
	t.Parallel()
	for _, m := range []okx.Market{okx.MarketSwap} {
		t.Run(string(m), func(t *testing.T) {
			t.Parallel()
			v, fake := setup(t, m)
			o := order("hxokxtpsl1", "BTCUSDT", "buy", "0.01")
			o.TakeProfit, o.StopLoss = at("61000.07"), at("59000.01")
			r, err := v.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusFilled, r.Status)
			require.Equal(t, "61000", r.TakeProfit.Decimal.String(), "a long's take-profit rounds down")
			require.Equal(t, "59000.1", r.StopLoss.Decimal.String(), "its stop rounds up")

			held := fake.Orders()
			require.Len(t, held, 1)
			require.Equal(t, "61000", held[0].TpTriggerPx.String())
			require.Equal(t, "-1", held[0].TpOrdPx.String(), "executed at the market price")

			got, err := v.Lookup(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, r.StopLoss, got.StopLoss)

			// Exits moved or removed at OKX (amend-order, the app) leave
			// the order this signal's: the lookup reports what OKX holds.
			other := o
			other.StopLoss = at("58000")
			got, err = v.Lookup(ctx(t), other)
			require.NoError(t, err)
			require.Equal(t, r.StopLoss, got.StopLoss, "the stop OKX holds, not the one asked")
			none := o
			none.TakeProfit, none.StopLoss = nil, nil
			got, err = v.Lookup(ctx(t), none)
			require.NoError(t, err)
			require.Equal(t, r.TakeProfit, got.TakeProfit)
		})
	}
}

// OKX would place a spot entry's attached take-profit or stop-loss as an
// order of its own once the entry filled, selling coins hoox's spot
// ledger never hears of: okx spot refuses them, and an order carrying
// them anyway is never sent.
func TestSpotRefusesAttachedTPSL(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSpot)
	market := order("hxokxspottp", "BTCUSDT", "buy", "0.01")
	market.TakeProfit = at("61000")
	limit := order("hxokxspotsl", "BTCUSDT", "buy", "0.01")
	limit.OrderType, limit.Price, limit.StopLoss = "limit", decimal.NewNullDecimal(d("59500")), at("59000")
	for _, o := range []exchange.Order{market, limit} {
		require.Equal(t, okx.ReasonSpotTPSL, v.RefuseAttachments(o))
		r, err := v.Place(ctx(t), o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusRejected, r.Status)
		require.Equal(t, okx.ReasonSpotTPSL, r.Reason)
	}
	require.Empty(t, fake.Orders(), "nothing booked")
}

func TestAttachedTPSLRefusals(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)

	// Last price 60000: a long's take-profit at 59000 is refused by OKX.
	o := order("hxokxtpsl2", "BTCUSDT", "buy", "0.01")
	o.TakeProfit = at("59000")
	r, err := v.Place(ctx(t), o)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "take profit trigger price must be higher than the best ask price")

	trailing := order("hxokxtpsl3", "BTCUSDT", "buy", "0.01")
	trailing.TrailingStop = &exchange.Attached{Percent: decimal.NewNullDecimal(d("1"))}
	require.Empty(t, v.RefuseAttachments(trailing), "a percent trailing stop on a swap entry is taken (as a leg)")
	r, err = v.Place(ctx(t), trailing)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status, "an entry is never sent without the trailing stop it carries")
	distance := trailing
	distance.TrailingStop = &exchange.Attached{Distance: decimal.NewNullDecimal(d("100"))}
	require.Empty(t, v.RefuseAttachments(distance), "a price distance too (callbackSpread)")
	spot, _ := setup(t, okx.MarketSpot)
	require.Equal(t, okx.ReasonTrailingSpot, spot.RefuseAttachments(trailing))

	pct := order("hxokxtpsl4", "BTCUSDT", "buy", "0.01")
	pct.StopLoss = &exchange.Attached{Percent: decimal.NewNullDecimal(d("2"))}
	r, err = v.Place(ctx(t), pct)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Contains(t, r.Reason, "not resolved")
	require.Empty(t, fake.Orders(), "nothing booked")
}
