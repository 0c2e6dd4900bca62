package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// Binance USDⓈ-M refuses a limit price outside PERCENT_PRICE around the
// mark price: a SELL below markPrice × multiplierDown is -4024 "Price is
// lower than mark price multiplier floor." (common-definition.md
// "PERCENT_PRICE"; error-code.md -4024), the floor's twin of -4016. Both
// are refusals for good: 422 order_rejected with Binance's reason, not an
// unknown outcome left to reconcile (202, then a failed trace and a
// missed-trade notice for an order that was never placed).
func TestBinanceFuturesLimitPriceBelowThePercentPriceFloorIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	// ETHUSDT's mark price is 3000: the floor for a sell is 2550.
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"short","quantity":"1",
		"order_type":"limit","price":"2500","trace_id":"pp-floor"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge, "a limit sell Binance refused on PERCENT_PRICE is refused, not reconciled")
	require.Equal(t, codes.OrderRejected, ge.Code, ge.Detail)
	require.Contains(t, ge.Detail, "Price is lower than mark price multiplier floor")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:pp-floor' AND status = 'rejected'`))
	require.Empty(t, b.binance.Orders())
}
