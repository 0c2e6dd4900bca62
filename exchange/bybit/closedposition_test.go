package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// A linear close says whether it left the position flat: Bybit cancels a
// position's trailing stop "if the position is closed"
// (docs/v5/position/trading-stop.mdx:10), so a setting made before such
// a close ended with it. A percent_of_position close of part of the long
// leaves the position, and its trailing stop, open; so does a spot close
// (no position).
func TestLinearWholeCloseSaysThePositionClosed(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketLinear)
	ctx := context.Background()
	b.fake.SetPosition("BTCUSDT", "Buy", d("0.05"))

	part := resolveClose("BTCUSDT", "close")
	part.Quantity, part.Partial = d("0.02"), true
	part.Sizing = &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "40%"}
	r, err := b.venue.Place(ctx, part)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.False(t, r.PositionClosed, "0.03 still open")

	r, err = b.venue.Place(ctx, resolveClose("BTCUSDT", "close"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, r.PositionClosed)
}
