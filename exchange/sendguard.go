package exchange

import (
	"context"
	"sync/atomic"
)

// sendGuardKey carries a *sendGuard in a context.
type sendGuardKey struct{}

// sendGuard is one placement's guard and whether a request went to the
// venue since it was installed.
type sendGuard struct {
	check     func(context.Context) error
	requested atomic.Bool
}

// WithSendGuard returns ctx carrying guard, a last check run right before
// the request that creates an order (see [CheckSendGuard]). The caller
// installs it on the context it passes to [Venue.Place] (or
// [PlaceOrAdopt]) when the conditions it checked before — the kill switch,
// read in the statement that armed the order's intent — may have changed
// while the adapter reads the venue: Place may read the position, set the
// leverage or cancel resting orders first, each for up to the venue
// timeout. An error from guard means nothing may be sent; it should wrap
// [ErrUnreachable], which is what the adapter's Place then answers.
func WithSendGuard(ctx context.Context, guard func(context.Context) error) context.Context {
	return context.WithValue(ctx, sendGuardKey{}, &sendGuard{check: guard})
}

// WithoutSendGuard returns ctx with no send guard, whatever ctx carried:
// for a request that completes a step the guard already allowed and that
// must not be stopped halfway. An adapter that cancelled resting orders so
// that a close could go through (Binance USDⓈ-M -2022) sends the close
// again under it: the guard's check before the cancel was the decision for
// the whole close, since stopping the close after the cancel would leave
// the position without the orders that protected it, and without the
// close they were cancelled for.
func WithoutSendGuard(ctx context.Context) context.Context {
	return context.WithValue(ctx, sendGuardKey{}, (*sendGuard)(nil))
}

// NoteRequest records that a request is going to the venue under ctx: the
// next [CheckSendGuard] runs the guard. Adapters call it for every request
// they send; without a guard on ctx it does nothing.
func NoteRequest(ctx context.Context) {
	if g, ok := ctx.Value(sendGuardKey{}).(*sendGuard); ok && g != nil {
		g.requested.Store(true)
	}
}

// CheckSendGuard runs ctx's send guard, if it has one and a request went
// to the venue since it was installed ([NoteRequest]), and returns its
// error: the adapter sends nothing and returns it. An order whose request
// is the first one its Place sends pays nothing: the guard's reading is
// still the one its caller took just before.
func CheckSendGuard(ctx context.Context) error {
	g, ok := ctx.Value(sendGuardKey{}).(*sendGuard)
	if !ok || g == nil || !g.requested.Load() {
		return nil
	}
	return g.check(ctx)
}
