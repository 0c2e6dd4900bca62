package bybit_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
)

// Bybit refuses set-leverage for a portfolio-margin account with 110038
// ("Portfolio margin mode is not allowed to change leverage", error.mdx).
// The code is not in ErrorTable, so since this round it is ClassUnknown,
// and ensureLeverage turns every non-refusal into asUnreachable: the order
// is answered "venue unreachable, nothing placed" (the gateway's 503 and
// a venue error), and every resend of the signal gets the same, for ever.
// Before the round an unlisted retCode was a refusal, and the order was
// rejected with Bybit's reason ("set leverage 10: ..."), as 110013 still is.
func TestUnlistedLeverageRefusalIsRejectedNotUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	b.fake.Inject(bybitfake.PathLeverage, 1, bybitfake.Refuse(110038, "Portfolio margin mode is not allowed to change leverage"))
	o := marketOrder("BTCUSDT", "buy", "0.01")
	o.Leverage = 7
	r, err := b.venue.Place(ctx, o)
	require.NoError(t, err, "a refused leverage change read as an unreachable venue (the gateway answers 503 and the sender retries for ever)")
	require.Equal(t, exchange.StatusRejected, r.Status)
	require.Zero(t, b.fake.Requests(bybitfake.PathCreate), "nothing placed")
}
