package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// A percent_of_position exit on a linear account in hedge mode is refused
// as Place refuses hedge mode (ReasonHedgeMode). The position list then
// holds positionIdx 1 (Buy) and 2 (Sell) entries, which the one-way read
// skips: the long once read as no position, and the trader holding it was
// told "no position to close".
func TestLinearHedgeModeSizingSaysHedgeMode(t *testing.T) {
	t.Parallel()
	b := setup(t, bybit.MarketLinear)
	ctx := context.Background()
	r, err := b.venue.Place(ctx, marketOrder("BTCUSDT", "buy", "0.01"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	b.fake.SetHedgeMode(true) // the long is now the hedge-mode Buy side

	o := resolveClose("BTCUSDT", "close")
	o.Quantity = d("50")
	facts, err := b.venue.SizingFacts(ctx, o, exchange.Need(exchange.QuantityPercentOfPosition, o))
	require.NoError(t, err)
	_, _, reason := exchange.Resolve(exchange.QuantityPercentOfPosition, o, facts)
	require.Equal(t, bybit.ReasonHedgeMode, reason)
}
