package gateway_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// A "100%" close on paper while a limit close of part of the long rests:
// sized from the whole position, as on Binance and Bybit, it closes all of
// it, the resting close cancelled first, as hoox does on Binance USDⓈ-M
// for a close that flattens; the follow job then records the resting
// close cancelled. A "50%" close behind it is refused instead: the 422
// says why — the resting close takes part of the position — and what is
// left to close.
func TestPaperPercentCloseWhileACloseRests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"market","trace_id":"long"}`))
	require.NoError(t, err)
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"0.75","price":"110","trace_id":"tp"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)

	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"50%","trace_id":"half"}`))
	var ge *gateway.Error
	require.True(t, errors.As(err, &ge), "%v", err)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Contains(t, ge.Detail, paper.ReasonExceedsPosition)
	require.Contains(t, ge.Detail, "resting reduce-only sells already take 0.75 of the position of 1", ge.Detail)
	require.Contains(t, ge.Detail, "50% of the position", ge.Detail)
	require.Contains(t, ge.Detail, "0.25 is left to close", ge.Detail)
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:half' AND status = 'rejected'"))

	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"close","quantity":"100%","trace_id":"all"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, "filled", out.Order.Status)
	require.Equal(t, "1", out.Order.Quantity.String())
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM paper_orders WHERE client_order_id = (SELECT client_order_id FROM orders WHERE trace_id = 'k:tp') AND status = 'cancelled'"),
		"the resting close was cancelled first")
}
