package okx_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// A close planned on a side (a split close's part, a percent_of_position
// exit: Partial with Side) goes out only while that side still reduces
// the net position; once the position has turned the other way, or is
// gone, it is refused as having no position to close and nothing is sent.
func TestSwapPlannedCloseKeepsItsSide(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ side, contracts, wantQty string }{
		{"sell", "5", "0.02"},
		{"sell", "-5", ""},
		{"buy", "5", ""},
		{"sell", "0", ""},
	} {
		t.Run(c.side+" "+c.contracts, func(t *testing.T) {
			t.Parallel()
			v, fake := setup(t, okx.MarketSwap)
			fake.SetPosition("BTC-USDT-SWAP", d(c.contracts))
			r, err := v.Place(ctx(t), exchange.Order{ClientOrderID: "hxpart1", Symbol: "BTCUSDT", Action: "close", Side: c.side,
				Partial: true, ReduceOnly: true, OrderType: "market", Quantity: d("0.02")})
			require.NoError(t, err)
			if c.wantQty == "" {
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, okx.ReasonNoPosition, r.Reason)
				require.Empty(t, fake.Orders(), "nothing sent")
				require.Equal(t, c.contracts, fake.Position("BTC-USDT-SWAP").String())
				return
			}
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			require.Equal(t, c.side, r.Side)
			require.Equal(t, c.wantQty, r.Quantity.String())
		})
	}
}
