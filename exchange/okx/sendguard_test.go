package okx_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// A trailing stop's algo order is sent after Place read the venue (the
// clock, the instrument): the caller's send guard (the kill switch,
// engaged meanwhile) runs right before the algo request and stops it,
// nothing placed.
func TestSendGuardStopsATrailingStopAlgoOrder(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	fake.SetPosition("BTC-USDT-SWAP", d("3"))
	halted := errors.New("halted")
	calls := 0
	guard := func(context.Context) error {
		calls++
		return fmt.Errorf("%w: %w", halted, exchange.ErrUnreachable)
	}
	_, err := v.Place(exchange.WithSendGuard(ctx(t), guard), trailingExit("hxokxguard1", "0.03", "1.5"))
	require.ErrorIs(t, err, halted)
	require.ErrorIs(t, err, exchange.ErrUnreachable, "nothing was sent")
	require.Equal(t, 1, calls)
	require.Empty(t, fake.AlgoOrders())
	require.Empty(t, fake.Orders())
}
