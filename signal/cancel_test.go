package signal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A cancel names no order: it needs no quantity, and the order fields a
// reused template carries are not read — the same cancel whatever they say.
func TestCancelHasNoQuantity(t *testing.T) {
	t.Parallel()
	s := mustSignal(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"CANCEL","trace_id":"c-1"}`)
	require.Equal(t, ActionCancel, s.Action)
	require.True(t, s.Quantity.IsZero())
	require.Empty(t, s.Side)
	require.False(t, s.ReduceOnly)

	withOrderFields := mustSignal(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"cancel","quantity":"{{strategy.order.contracts}}","price":"x","trace_id":"c-1"}`)
	require.Equal(t, string(s.Canonical()), string(withOrderFields.Canonical()))

	c := string(s.Canonical())
	require.Equal(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"cancel","quantity":"","price":null,"order_type":"","leverage":null,"timestamp":null,"test":false,"strategy":"","comment":""}`, c)
	require.Equal(t, c, string(mustSignal(t, c).Canonical()), "the canonical form is itself the same signal")

	// Every other action still needs its quantity.
	require.Equal(t, FieldQuantity, signalError(t, `{"exchange":"binance","symbol":"BTCUSDT","action":"buy"}`).Field)
}

func TestIsClientOrderID(t *testing.T) {
	t.Parallel()
	require.True(t, IsClientOrderID(ClientOrderID("dep", "k:x", 0)))
	require.False(t, IsClientOrderID("manual-order-1"))
	require.False(t, IsClientOrderID("hx"+"ABCDEFGHIJKLMNOPQRSTUVWXYZ2345"), "hoox's IDs are lower-case")
	require.False(t, IsClientOrderID(ClientOrderID("dep", "k:x", 0)+"a"))
}

// A strategy cancels its resting entry while it is flat, so a cancel
// template that carries the strategy's position renders "market_position":
// "flat". The signal stays a cancel: sentiment "flat" turns order actions
// into a close, never a cancel (read as a close it sold the whole position
// at market, or, without a quantity, was refused and left the entry
// resting).
func TestCancelWithAFlatPositionStaysACancel(t *testing.T) {
	t.Parallel()
	const base = `"secret":"s","exchange":"binance","symbol":"BTCUSDT","action":"cancel","market_position":"flat","timestamp":"2024-05-01T12:00:00Z"`

	t.Run("WithoutQuantity", func(t *testing.T) {
		// The README's cancel template plus the position.
		raw, err := Decode([]byte(`{` + base + `}`))
		require.NoError(t, err)
		s, err := raw.Signal()
		require.NoError(t, err, "a cancel needs no quantity, whatever the position says")
		require.Equal(t, ActionCancel, s.Action)
	})
	t.Run("WithQuantity", func(t *testing.T) {
		// A reused strategy template that also carries a quantity.
		s := mustSignal(t, `{`+base+`,"quantity":"0.5"}`)
		require.Equal(t, ActionCancel, s.Action, "the cancel was read as a %s of the whole position (reduce-only %v, quantity type %s)", s.Action, s.ReduceOnly, s.QuantityType)
		require.False(t, s.ReduceOnly)
	})
}
