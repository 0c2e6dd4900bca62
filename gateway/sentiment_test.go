package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// A strategy's exit that leaves it long and its reversal that leaves it
// short, both a sell of one contract under one order ID, sent without a
// key or timestamp inside one dedup window, are two orders: the second
// was answered 409 duplicate (one fingerprint: sentiment was not part of
// it) and never reached the venue.
func TestSellsLeavingTheStrategyLongAndShortInOneWindowAreTwoOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","trace_id":"entry"}`))
	require.NoError(t, err)

	for _, position := range []string{"long", "short"} {
		out, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","market_position":"`+position+`","quantity":"1","comment":"Exit"}`))
		require.NoError(t, err, "the sell leaving the strategy %s", position)
		require.NotNil(t, out.Order)
		require.Equal(t, "sell", out.Order.Side)
	}
	require.Equal(t, 2, count(t, b.pool, "SELECT count(*) FROM orders WHERE side = 'sell'"), "both sells reach the venue")
}
