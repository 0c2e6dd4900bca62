package bybit_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// A trailing stop is set only after Place read the position: the caller's
// send guard (the kill switch, engaged during that read) runs right
// before the trading-stop request and stops it, nothing set.
func TestSendGuardStopsATrailingStopAfterThePositionRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, bybit.MarketLinear)
	b.fake.SetPosition("BTCUSDT", "Buy", d("0.01"))
	halted := errors.New("halted")
	calls := 0
	guard := func(context.Context) error {
		calls++
		return fmt.Errorf("%w: %w", halted, exchange.ErrUnreachable)
	}
	_, err := b.venue.Place(exchange.WithSendGuard(ctx, guard), trailingExit("600"))
	require.ErrorIs(t, err, halted)
	require.ErrorIs(t, err, exchange.ErrUnreachable, "nothing was sent")
	require.Equal(t, 1, calls)
	require.Zero(t, b.fake.TrailingStopSets("BTCUSDT"))
	require.True(t, b.fake.TrailingStop("BTCUSDT").IsZero())
}
