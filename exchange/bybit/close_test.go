package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// A close planned on a side (a split close's part, a percent_of_position
// exit: Partial with Side) goes out only while that side still reduces
// the position; once the position has turned the other way, or is gone,
// it is refused as having no position to close and nothing is sent.
func TestLinearPlannedCloseKeepsItsSide(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct{ side, posSide, size, wantQty string }{
		{"sell", "Buy", "0.5", "0.2"},
		{"sell", "Sell", "0.5", ""},
		{"buy", "Buy", "0.5", ""},
		{"sell", "", "0", ""},
	} {
		t.Run(c.side+" "+c.posSide, func(t *testing.T) {
			t.Parallel()
			b := setup(t, bybit.MarketLinear)
			b.fake.SetPosition("BTCUSDT", c.posSide, d(c.size))
			o := resolveClose("BTCUSDT", "close")
			o.Partial, o.Side, o.Quantity = true, c.side, d("0.2")
			r, err := b.venue.Place(ctx, o)
			require.NoError(t, err)
			if c.wantQty == "" {
				require.Equal(t, exchange.StatusRejected, r.Status)
				require.Equal(t, bybit.ReasonNoPosition, r.Reason)
				require.Empty(t, b.fake.Orders(), "nothing sent")
				require.Equal(t, c.size, b.fake.Position("BTCUSDT").Size.String())
				return
			}
			require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
			require.Equal(t, c.side, r.Side)
			require.Equal(t, c.wantQty, r.Quantity.String())
		})
	}
}
