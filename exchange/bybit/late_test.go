package bybit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
)

// TestOrderMissingPastItsWindowIsAMissedTrade: Bybit's create is
// asynchronous ("This request is asynchronous", create-order.mdx), and its
// docs promise no check of recv_window once the backend has the request
// (guide.mdx checks it on receipt), so the fake books a create long after
// its window (LateInEngine). A "not found" past the accept window therefore
// proves nothing (RefusesLateRequests is false): the sweeper ends the bare
// intent failed, a missed trade for an operator, and keeps the key blocked,
// so a resent signal is a duplicate rather than the next execution under a
// new client order ID, which the late original would not collide with.
// When the original is booked, it is the only order, and a lookup finds it.
func TestOrderMissingPastItsWindowIsAMissedTrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		require.False(t, exchange.RefusesLate(b.venue), "a late create can still be booked")
		late := b.venue.AcceptWindow() + 30*time.Second
		b.fake.InjectPlacements(1, bybitfake.LateInEngine(late))
		o := marketOrder("BTCUSDT", "buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

		// The sweeper looks the bare intent up once its window has closed.
		b.clock.Advance(b.venue.AcceptWindow())
		r, err := b.venue.Lookup(ctx, o)
		require.ErrorIs(t, err, exchange.ErrNotFound)
		in := db.Intent{ClientOrderID: o.ClientOrderID, Exchange: "bybit", Order: o, SentAgo: b.venue.AcceptWindow()}
		rec, _, derr := jobs.DecideLookup(in, "k:late", true, b.venue, r, err)
		require.NoError(t, derr)
		require.Equal(t, db.IntentFailed, rec.IntentOutcome, "not found proves nothing: the key is not freed")
		require.Equal(t, db.TraceFailed, rec.TraceStatus, "a missed trade, for an operator")

		// The original reaches Bybit's backend afterwards: one order, which
		// the sweeper's next look records.
		b.clock.Advance(late)
		_, booked := b.fake.Order(string(c), o.ClientOrderID)
		require.True(t, booked, "the late original was booked")
		require.Len(t, b.fake.Orders(), 1)
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}

// TestLateOriginalCannotFillTwice: should an order be placed again under
// the same orderLinkId while a late original is still on its way (the fake
// books a create long after its window, as Bybit's asynchronous create
// may), the ID, "always unique" (create-order.mdx), makes whichever comes
// second a duplicate: only one order exists.
func TestLateOriginalCannotFillTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		late := b.venue.AcceptWindow() + 10*time.Second
		b.fake.InjectPlacements(1, bybitfake.LateInEngine(late))
		o := marketOrder("BTCUSDT", "buy", "0.01")
		_, err := b.venue.Place(ctx, o)
		require.ErrorIs(t, err, exchange.ErrUnknownOutcome)

		// The accept window closes with nothing to find, and the order is
		// placed again under the same ID.
		b.clock.Advance(b.venue.AcceptWindow())
		r, adopted, err := exchange.PlaceOrAdopt(ctx, b.venue, o, true)
		require.NoError(t, err)
		require.False(t, adopted)
		require.Equal(t, exchange.StatusFilled, r.Status)

		// The original reaches the backend afterwards: refused.
		b.clock.Advance(late)
		require.Zero(t, b.fake.PendingLate())
		require.Equal(t, 1, b.fake.LateRefused())
		require.Len(t, b.fake.Orders(), 1)
	})
}
