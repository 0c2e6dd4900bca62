package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/jobs"
)

// maxLegSends counts the sends that may have reached the venue, not every
// arming: a leg the venue rate-limited on ten passes — each armed and then
// proven never sent (order_legs.unsent) — and whose first real send then
// lost its answer is sent again, not failed as "sent 11 times and never
// seen" after a single send (which left the rest of the close, or an
// exit, unplaced).
func TestLegArmedButUnsentIsNotCountedAsSent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	// After the close's first part: ten placements refused by Bybit's rate
	// limit before anything is accepted (nothing sent), then one untabled
	// answer (may exist: unknown).
	out := bybitSplitClose(t, b, "bybit-ratelimited-leg", func() {
		b.bybit.InjectPlacements(10, bybitfake.TooManyVisits(time.Millisecond))
		b.bybit.InjectPlacements(1, bybitfake.Refuse(170999, "Untabled refusal."))
	})
	created := b.bybit.Requests(bybitfake.PathCreate)

	var lockKey string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1`, out.Order.ClientOrderID).Scan(&lockKey))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil)
	// Passes until one ends the leg: each sets the last send past the
	// accept window; the adapter holds sends back until the rate limit's
	// reset (a whole second on Bybit's header), armed and proven unsent.
	require.Eventually(t, func() bool {
		_, err := b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE parent_client_order_id = $1 AND sent_at IS NOT NULL`,
			out.Order.ClientOrderID)
		require.NoError(t, err)
		_, err = runner.Finish(ctx, lockKey, out.Order.ClientOrderID)
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "a pass ends the leg")
	var outcome string
	var attempts int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(outcome, ''), attempts FROM order_legs WHERE parent_client_order_id = $1`,
		out.Order.ClientOrderID).Scan(&outcome, &attempts))
	t.Logf("placements after the first part: %d, leg attempts: %d", b.bybit.Requests(bybitfake.PathCreate)-created, attempts)
	require.Equal(t, "dispatched", outcome, "the rest of the close is placed: it reached the venue once, not ten times")
	require.True(t, b.bybit.Position("ETHUSDT").Size.IsZero(), "the position is closed")
}

// A sell that leaves the strategy flat (market_position "flat") closes
// the whole position whatever the quantity says. A market close is the
// venue's close of the whole position; a limit close (paper's) rests for
// its quantity, so a flat close with a price is sized as 100 % of the
// position — the template's "25%" is neither 25 coins (refused with a long
// of 10, or 25 coins of a larger long) nor a quarter.
func TestFlatLimitCloseIsNotAPercentReadAsCoins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"10","order_type":"market","trace_id":"long10"}`))
	require.NoError(t, err)
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"sell","market_position":"flat","quantity":"25%","price":"110","trace_id":"flat-limit"}`))
	require.NoError(t, err, "the strategy's exit to flat is refused")
	require.NotEqual(t, "25", out.Order.Quantity.String(), "a percentage sent as 25 coins")
	require.Equal(t, "10", out.Order.Quantity.String(), "the whole position")
}
