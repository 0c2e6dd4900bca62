package gateway_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// Where a venue cannot take an attached exit, the signal is refused with
// 422 unsupported before anything is claimed or sent: Binance spot with
// only one of take-profit and stop-loss (its exits are one OCO order list),
// a trailing stop on Binance spot and Bybit spot, a trailing stop beside
// TP/SL on Bybit linear, TP/SL on Bybit spot and OKX spot (see
// TestSpotVenueRefusesExitsItWouldPlaceOutsideTheLedger).
func TestAttachedExitsRefusedWhereTheVenueCannot(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	tests := []struct {
		exchange, members, detail string
	}{
		{"binance", `"stop_loss":"40000","trailing_stop":{"percent":1}`, "beside a stop_loss it would be a second stop"},
		{"binance", `"trailing_stop":{"distance":50}`, "trailing_stop on Binance spot takes a percent"},
		{"bybit-spot", `"trailing_stop":{"percent":1}`, "trailing_stop is not supported on bybit-spot"},
		{"bybit", `"trailing_stop":{"percent":1},"stop_loss":"59000"`, "bybit takes trailing_stop without take_profit/stop_loss in one signal"},
		{"bybit-spot", `"take_profit":"70000"`, "take_profit/stop_loss are not supported on bybit-spot"},
		{"okx", `"stop_loss":"50000"`, "take_profit/stop_loss are not supported on okx spot"},
	}
	for i, tt := range tests {
		_, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
			`{"exchange":%q,"symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"refuse-%d",%s}`, tt.exchange, i, tt.members)))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tt.exchange)
		require.Equal(t, codes.Unsupported, ge.Code, tt.exchange)
		require.Contains(t, ge.Detail, tt.detail)
	}
	var traces int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM trace_ids`).Scan(&traces))
	require.Zero(t, traces, "nothing claimed")
	require.Empty(t, b.binance.Orders(), "nothing sent")
	require.Empty(t, b.bybit.Orders())
	require.Empty(t, b.okx.Orders())
	require.Zero(t, b.binance.Requests("/api/v3/exchangeInfo")+b.binance.Requests("/fapi/v1/exchangeInfo"), "not even a read")
}

// On Bybit linear a percent take-profit is resolved from the last price
// read before the intent (60000, tick 0.10) and goes out on the order; a
// percentage that rounds onto the entry is refused before sending.
func TestBybitPercentTargetsResolvedBeforeSending(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()

	out, err := b.svc.Execute(ctx, input(t,
		`{"exchange":"bybit","symbol":"BTCUSDT","action":"short","quantity":"0.01","take_profit":{"percent":1.5},"stop_loss":"0.7%","trace_id":"pct-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	held, ok := b.bybit.Order(bybitfake.CategoryLinear, out.Order.ClientOrderID)
	require.True(t, ok)
	require.Equal(t, "59100", held.TakeProfit.String(), "a short's take-profit 1.5 % below 60000")
	require.Equal(t, "60420", held.StopLoss.String(), "its stop 0.7 % above")
	require.Equal(t, "59100", out.Order.TakeProfit.Decimal.String())
	require.Equal(t, "60420", out.Order.StopLoss.Decimal.String())

	_, err = b.svc.Execute(ctx, input(t,
		`{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","stop_loss":{"percent":0.0001},"trace_id":"pct-2"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, "stop_loss: trigger 60000 is not below the entry's price 60000")
	require.Len(t, b.bybit.Orders(), 1, "nothing more was sent")
}
