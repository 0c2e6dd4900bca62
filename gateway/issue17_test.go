package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/testcontainers"
)

// B5: a repeat of a placed signal is a duplicate whatever the kill switch
// says: the sender must learn that its order exists, not read "nothing was
// placed" and place it elsewhere by hand. Both a lone repeat and copies
// coalesced behind one another get the 409 with the order.
func TestKillSwitchStillAnswersRepeatsWithTheirOrder(t *testing.T) {
	t.Parallel()
	b := setupMem(t, testcontainers.NewDatabase(t), &memVenue{}, nil)
	ctx := context.Background()
	for name, body := range map[string]string{
		"ClientKey": `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-k"}`,
		"Window":    `{"exchange":"mem","symbol":"ETHUSDT","action":"buy","quantity":"1"}`,
	} {
		out, err := b.svc.Execute(ctx, input(t, body))
		require.NoError(t, err, name)
		require.Equal(t, db.TraceDispatched, out.Status)
		_, err = db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
		require.NoError(t, err)

		_, err = b.svc.Execute(ctx, input(t, body))
		ge := requireCode(t, err, codes.Duplicate)
		require.Equal(t, out.Order.ID, *ge.Original.OrderID, name)

		_, err = db.SetKillSwitch(ctx, b.pool, false, "test", "admin")
		require.NoError(t, err)
	}
	require.Equal(t, 2, b.venue.count())

	// A new signal is still halted.
	_, err := db.SetKillSwitch(ctx, b.pool, true, "test", "admin")
	require.NoError(t, err)
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"halted-new"}`))
	requireCode(t, err, codes.KillSwitch)
	require.Equal(t, 2, b.venue.count())
}
