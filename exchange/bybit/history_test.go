package bybit_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
)

// Realtime lists a closed order only while it is among the account's
// latest 500 closed orders, and not at all after a Bybit release or
// restart ("filled, canceled, and rejected orders of Unified account
// should only be queried through order history", open-order.mdx); history
// keeps a filled order for two years, found by the time range asked (at
// most 7 days a query). A limit order that rested for weeks and then
// filled must be found there: the follow job follows an exit for up to 83
// days, looking every 5 minutes, and reads "not found" as "venue not
// asked" — a fill it missed would never be recorded (no fill event, no
// legs, no spot-ledger credit).
func TestLookupFindsALimitOrderFilledWeeksAfterItWasPlaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	eachCategory(t, func(t *testing.T, b *testBundle, c bybit.Market) {
		o := limitOrder("BTCUSDT", "buy", "0.01", "50000")
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)

		// It rests for 40 days; the follow job sees it open in realtime.
		b.clock.Advance(40 * 24 * time.Hour)
		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status)

		// It fills; before the next look, a Bybit release clears closed
		// orders from realtime.
		require.True(t, b.fake.PartialFill(string(c), o.ClientOrderID, d("0.01")))
		b.fake.ForgetClosedInRealtime()
		b.clock.Advance(5 * time.Minute)

		r, err = b.venue.Lookup(ctx, o)
		require.NoError(t, err, "Bybit keeps the filled order in history; hoox must find it")
		require.Equal(t, exchange.StatusFilled, r.Status)
	})
}
