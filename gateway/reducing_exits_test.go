package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// A strategy alert fires on every fill, exits included: a long strategy's
// exit sent through an entry template arrives as a sell carrying the
// entry's exits. On Binance USDⓈ-M, where the exits are their own
// reduce-only orders placed after the fill, the sell of the whole long
// places none — they would rest on the flat position on the BUY side and
// cut a later short — and records each rejected with why; a sell larger
// than the long (a reversal) gets exits for the short it opened only.
func TestBinanceFuturesEntryThatOnlyReducesGetsNoExits(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetPosition("ETHUSDT", decimal.NewFromInt(1))

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"sell","quantity":"1",
		"stop_loss":"3100","trailing_stop":{"percent":1.5},"trace_id":"reduce-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.True(t, b.binance.Position("ETHUSDT").IsZero(), "the sell closed the long")
	require.Empty(t, b.binance.AlgoOrders(), "no exit rests on the flat position")
	require.Len(t, out.Legs, 2)
	for _, leg := range out.Legs {
		require.Equal(t, string(exchange.StatusRejected), leg.Status, leg.Role)
		require.NotNil(t, leg.RejectReason)
		require.Contains(t, *leg.RejectReason, "was a long of 1 before the entry: its sell of 1 only reduced it and opened no short position")
		require.Equal(t, db.AttachedNotPlaced, leg.Attached()[0].Status)
	}

	b.binance.SetPosition("ETHUSDT", decimal.NewFromInt(1))
	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"sell","quantity":"3",
		"stop_loss":"3100","trailing_stop":{"percent":1.5},"trace_id":"reduce-2"}`))
	require.NoError(t, err)
	require.True(t, decimal.NewFromInt(-2).Equal(b.binance.Position("ETHUSDT")), "reversed to a short of 2")
	algos := b.binance.AlgoOrders()
	require.Len(t, algos, 2)
	for _, a := range algos {
		require.Equal(t, "BUY", a.Side)
		require.Equal(t, "2", a.Quantity.String(), "%s covers the short the sell opened, not the long it closed", a.Type)
	}
	for _, leg := range out.Legs {
		require.Equal(t, string(exchange.StatusOpen), leg.Status, leg.Role)
	}
}

// OKX swap places a trailing stop as its own reduce-only algo order for
// what the entry filled: a sell that only reduced a long places none
// (recorded rejected, with why), a sell that reversed it trails the short
// it opened only.
func TestOKXSwapEntryThatOnlyReducesGetsNoTrailingStop(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.okx.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(3)) // 0.03 BTC

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"sell","quantity":"0.03",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-reduce-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Empty(t, b.okx.TrailingStops(), "no trailing stop on the flat position")
	require.Len(t, out.Legs, 1)
	require.Equal(t, string(exchange.StatusRejected), out.Legs[0].Status)
	require.Contains(t, *out.Legs[0].RejectReason, "only reduced it and opened no short position for the trailing_stop to protect")

	b.okx.SetPosition("BTC-USDT-SWAP", decimal.NewFromInt(3))
	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"sell","quantity":"0.05",
		"trailing_stop":{"percent":1.5},"trace_id":"okx-reduce-2"}`))
	require.NoError(t, err)
	algos := b.okx.TrailingStops()
	require.Len(t, algos, 1)
	require.Equal(t, "buy", algos[0].Side)
	require.Equal(t, "2", algos[0].Sz.String(), "the 0.02 BTC short the sell opened: 2 contracts")
	require.Equal(t, string(exchange.StatusOpen), out.Legs[0].Status)
}
