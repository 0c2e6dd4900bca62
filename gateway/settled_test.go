package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
)

// A repeat of a trace this replica settled is answered from one read of the
// trace (settled.go). What it answers must be what a claim would: the
// original order, before the kill switch, a key reuse refused, and, once an
// operator released the trace (on any replica), the signal executes again
// although this replica remembers it settled.
func TestSettledRepeatAnswersLikeAClaimAndAReleaseStillReopensTheKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	body := `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"settled-repeat"}`
	first, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, first.Status)

	repeat := func(body string) *gateway.Error {
		t.Helper()
		_, err := b.svc.Execute(ctx, input(t, body))
		var ge *gateway.Error
		require.True(t, errors.As(err, &ge), "want a refusal, got %v", err)
		return ge
	}
	ge := repeat(body)
	require.Equal(t, codes.Duplicate, ge.Code)
	require.Equal(t, first.Order.ID, *ge.Original.OrderID)
	require.Equal(t, first.Order.ClientOrderID, *ge.Original.ClientOrderID)
	require.Equal(t, db.TraceDispatched, ge.Original.Status)

	// Before the kill switch, as the claim answers it.
	_, err = db.SetKillSwitch(ctx, b.pool, true, "test", "test")
	require.NoError(t, err)
	require.Equal(t, codes.Duplicate, repeat(body).Code)
	_, err = db.SetKillSwitch(ctx, b.pool, false, "test", "test")
	require.NoError(t, err)

	// The same key with another signal is a key reuse, recorded durably.
	reused := repeat(`{"exchange":"paper","symbol":"BTCUSDT","action":"sell","quantity":"1","trace_id":"settled-repeat"}`)
	require.Equal(t, codes.KeyReused, reused.Code)

	// Released by an operator (through any replica): the next send here
	// places a second order, whatever this replica remembers.
	_, err = db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: "k:settled-repeat", By: "admin", LockWait: time.Second})
	require.NoError(t, err)
	again, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err, "a released key executes again")
	require.NotEqual(t, first.Order.ClientOrderID, again.Order.ClientOrderID)
	require.Equal(t, 2, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:settled-repeat'"))
	require.Equal(t, codes.Duplicate, repeat(body).Code)

	b.svc.Close() // waits for the repeats' audit rows
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:settled-repeat' AND event = 'key_reused'"))
	require.Equal(t, 3, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:settled-repeat' AND event = 'duplicate'"))
	// Each repeat's row names the fingerprint it came with (written many
	// to one statement).
	require.Equal(t, 4, count(t, b.pool, `SELECT count(DISTINCT id) FROM trace_history
		WHERE trace_id = 'k:settled-repeat' AND event IN ('duplicate', 'key_reused') AND detail->>'fingerprint' <> ''`))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(DISTINCT detail->>'fingerprint') FROM trace_history
		WHERE trace_id = 'k:settled-repeat' AND event IN ('duplicate', 'key_reused')`))
}
