package okx_test

import (
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// A resting limit order is followed: a partial fill shows as open with
// what executed, its average price and its fee (OKX's negative fee, as the
// amount charged); a cancel ends it cancelled with the partial fill kept;
// a second cancel — which OKX refuses 51400 — reports it as it is.
func TestFollowAndCancelALimitOrder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		market  okx.Market
		symbol  string
		partial string // sz as OKX counts it: contracts on a swap
		filled  string // in the base currency
		feeCcy  string
		fee     string
	}{
		{okx.MarketSpot, "BTCUSDT", "0.004", "0.004", "BTC", "0.000004"}, // 0.1% of the BTC received
		{okx.MarketSwap, "BTCUSDT.P", "0.4", "0.004", "USDT", "0.06"},    // 0.4 × 0.01 BTC × 30000 × 0.05%
	} {
		t.Run(string(c.market), func(t *testing.T) {
			t.Parallel()
			v, fake := setup(t, c.market)
			o := order("hxfollow"+string(c.market), c.symbol, "buy", "0.01")
			o.OrderType, o.Price = "limit", decimal.NewNullDecimal(d("30000"))
			placed, err := v.Place(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, placed.Status)

			require.NoError(t, fake.PartialFill(o.ClientOrderID, d(c.partial)))
			r, err := v.Lookup(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusOpen, r.Status)
			require.True(t, d(c.filled).Equal(r.FilledQuantity), "filled %s", r.FilledQuantity)
			require.True(t, d("30000").Equal(r.AvgPrice.Decimal))
			require.Equal(t, c.feeCcy, r.FeeAsset)
			require.True(t, d(c.fee).Equal(r.Fee), "fee %s", r.Fee)

			r, err = v.Cancel(ctx(t), o)
			require.NoError(t, err)
			require.Equal(t, exchange.StatusCancelled, r.Status)
			require.True(t, d(c.filled).Equal(r.FilledQuantity), "what filled before the cancel is kept")

			again, err := v.Cancel(ctx(t), o)
			require.NoError(t, err, "cancelling a cancelled order is not an error")
			require.Equal(t, exchange.StatusCancelled, again.Status)
			require.Equal(t, 2, fake.Requests(okxfake.PathCancel))

			_, err = v.Cancel(ctx(t), order("hxnothere", c.symbol, "buy", "0.01"))
			require.ErrorIs(t, err, exchange.ErrNotFound)
		})
	}
}
