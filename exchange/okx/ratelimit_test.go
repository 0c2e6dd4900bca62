package okx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// OKX limits placements per instrument, apart from order queries
// ("Rate limit rule: User ID + Instrument ID", Post_Place_Order.md;
// Introduction/Rate_Limits/Trading_Related_Apis.md). A placement answered
// 50011 on BTC holds back BTC's next placement (not sent: nothing to look
// up), but neither an ETH order, which OKX would take, nor the look-up of
// an order already placed, which the reconcile needs.
func TestRateLimitedPlacementHoldsBackOnlyThatInstrumentsPlacements(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetOrderRateLimit(1)

	r, err := v.Place(ctx(t), order("hxrl1", "BTCUSDT", "buy", "0.01"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status)

	_, err = v.Place(ctx(t), order("hxrl2", "BTCUSDT", "buy", "0.01"))
	require.ErrorIs(t, err, exchange.ErrUnreachable, "50011: nothing placed")
	require.Equal(t, 2, fake.Placements())
	_, err = v.Place(ctx(t), order("hxrl3", "BTCUSDT", "buy", "0.01"))
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, 2, fake.Placements(), "BTC's placements wait out the pause OKX asked for")

	held, err := v.Lookup(ctx(t), order("hxrl1", "BTCUSDT", "buy", "0.01"))
	require.NoError(t, err, "an order query is not a placement")
	require.Equal(t, exchange.StatusFilled, held.Status)

	r, err = v.Place(ctx(t), order("hxrl4", "ETHUSDT", "buy", "0.1"))
	require.NoError(t, err, "ETH's placements are counted apart")
	require.Equal(t, exchange.StatusFilled, r.Status)
	require.Len(t, fake.Orders(), 2)
}
