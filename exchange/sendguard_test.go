package exchange_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

type derivedKey struct{}

// The guard runs only once a request went to the venue under it: an order
// that is its Place's first request pays nothing, and a context without a
// guard (bench, tests, paper) never runs one.
func TestSendGuardRunsOnlyAfterARequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exchange.NoteRequest(ctx)
	require.NoError(t, exchange.CheckSendGuard(ctx), "no guard installed")

	stop := errors.New("stop")
	calls := 0
	gctx := exchange.WithSendGuard(ctx, func(context.Context) error { calls++; return stop })
	require.NoError(t, exchange.CheckSendGuard(gctx))
	require.Zero(t, calls, "no request yet: the caller's reading is current")

	exchange.NoteRequest(context.WithValue(gctx, derivedKey{}, 1)) // a request under a derived context
	require.ErrorIs(t, exchange.CheckSendGuard(gctx), stop)
	require.Equal(t, 1, calls)

	fresh := exchange.WithSendGuard(gctx, func(context.Context) error { calls++; return nil })
	require.NoError(t, exchange.CheckSendGuard(fresh))
	require.Equal(t, 1, calls, "a guard installed again starts with no request")
}

// WithoutSendGuard drops the guard for what follows it (a close sent
// again once its blockers were cancelled) and leaves the context it was
// derived from guarded.
func TestWithoutSendGuardDropsTheGuard(t *testing.T) {
	t.Parallel()
	stop := errors.New("stop")
	gctx := exchange.WithSendGuard(context.Background(), func(context.Context) error { return stop })
	exchange.NoteRequest(gctx)

	free := exchange.WithoutSendGuard(gctx)
	exchange.NoteRequest(free)
	require.NoError(t, exchange.CheckSendGuard(free))
	require.ErrorIs(t, exchange.CheckSendGuard(gctx), stop, "the guarded context keeps its guard")
}
