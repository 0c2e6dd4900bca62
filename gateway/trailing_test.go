package gateway_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// A USDⓈ-M market entry with a trailing stop of 1.25 % and a stop-loss:
// after the entry fills, the trailing stop goes out as a reduce-only
// TRAILING_STOP_MARKET algo order of the filled quantity with callbackRate
// 1.2 (rounded down to Binance's one decimal: tighter, never looser), under
// its own client order ID, and the answer lists it beside the stop-loss.
// A cancel reaches it like the other exits.
func TestBinanceFuturesEntryWithTrailingStopPlacesATrailingAlgoOrder(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"short","quantity":"2",
		"stop_loss":"3100","trailing_stop":{"percent":1.25},"trace_id":"trail-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.Orders(), 1, "the entry is the only plain order")
	algos := b.binance.AlgoOrders()
	require.Len(t, algos, 2)
	ts := algos[1]
	require.Equal(t, "TRAILING_STOP_MARKET", ts.Type)
	require.Equal(t, "1.2", ts.CallbackRate.String())
	require.Equal(t, "BUY", ts.Side, "a short's trailing stop buys back")
	require.Equal(t, "2", ts.Quantity.String())
	require.True(t, ts.ReduceOnly)
	require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 2), ts.ClientAlgoID)
	require.Len(t, out.Legs, 2)
	require.Equal(t, exchange.RoleTrailingStop, out.Legs[1].Role)
	require.Equal(t, "open", out.Legs[1].Status, "resting until triggered")
	require.Equal(t, "1.2", out.Legs[1].CallbackRate.Decimal.String())
	require.Equal(t, []db.AttachedExit{{Role: exchange.RoleTrailingStop, CallbackRate: out.Legs[1].CallbackRate,
		Status: db.AttachedPlaced, ClientOrderID: ts.ClientAlgoID, ExchangeOrderID: *out.Legs[1].ExchangeOrderID}}, out.Legs[1].Attached())

	cancel, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"trail-cancel"}`))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID}, cancelIDs(cancel.Cancelled))
	for _, a := range b.binance.AlgoOrders() {
		require.Equal(t, "CANCELED", a.Status, "%s no longer rests at the venue", a.ClientAlgoID)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'cancelled'
		AND callback_rate = 1.2`))
}

// A trailing stop Binance cannot hold is refused with 422 before anything
// is claimed or sent: a price distance (Binance trails by a percent only)
// and a percent outside callbackRate's 0.1–10 range.
func TestBinanceFuturesTrailingStopOutsideTheVenueRulesIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	for i, tt := range []struct{ members, detail string }{
		{`"trailing_stop":{"distance":30}`, binance.ReasonTrailingDistance},
		{`"trailing_stop":{"percent":0.05}`, "outside binance-futures' callbackRate range 0.1 to 10"},
		{`"trailing_stop":"10.5%"`, "outside binance-futures' callbackRate range 0.1 to 10"},
	} {
		_, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
			`{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":"trail-refuse-%d",%s}`, i, tt.members)))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tt.members)
		require.Equal(t, codes.Unsupported, ge.Code, tt.members)
		require.Contains(t, ge.Detail, tt.detail)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "nothing claimed")
	require.Empty(t, b.binance.Orders(), "nothing sent")
	require.Empty(t, b.binance.AlgoOrders())
}
