package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A template that spells a field's key in capitals ("Price") asks for
// what the field says: a limit buy at 80 rests. The key was dropped as
// unknown and the buy was sent at market and filled.
func TestCapitalisedPriceKeyPlacesTheLimitOrderAsked(t *testing.T) {
	t.Parallel()
	b := setup(t)
	out, err := b.svc.Execute(context.Background(), input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","Price":"80","trace_id":"limit-80"}`))
	require.NoError(t, err)
	require.Equal(t, "limit", out.Order.OrderType, "an order at market the trader did not ask for")
	require.Equal(t, "open", out.Order.Status)
	require.Equal(t, "80", out.Order.Price.Decimal.String())
}
