package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// On Bybit linear a trailing stop is a setting of the position
// (trading-stop's trailingStop: one per position, whichever entry set it
// last), not an order of one strategy. Strategies B and A each go long
// ETHUSDT with a trailing stop; the position trails by A's distance, the
// last set. A's cancel, under its name, must not clear it: the one
// setting is B's protection too, and hoox cannot clear A's part of it.
// The cancel keeps it, records A's trailing stop still open, and names
// it in its event (exits_kept_position). B's own cancel keeps it too
// while A's is there; a cancel without strategy clears it, as before.
// (That B's row stays open while the position trails by A's distance is
// how hoox records a replaced setting: it ends when looked at.)
func TestStrategysCancelKeepsTheBybitTrailingStopAnotherStrategyShares(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bLong, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"2",
		"trailing_stop":{"percent":1.2345},"strategy":"b","trace_id":"share-b"}`))
	require.NoError(t, err)
	require.Len(t, bLong.Legs, 1)
	aLong, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"1",
		"trailing_stop":{"percent":2},"strategy":"a","trace_id":"share-a"}`))
	require.NoError(t, err)
	require.Len(t, aLong.Legs, 1)
	aTrailing, bTrailing := aLong.Legs[0].ClientOrderID, bLong.Legs[0].ClientOrderID
	set := b.bybit.TrailingStop("ETHUSDT")
	require.True(t, set.IsPositive())

	cancel, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "a", "share-a-cancel")))
	require.NoError(t, err)
	require.Truef(t, b.bybit.TrailingStop("ETHUSDT").Equal(set),
		"strategy A's cancel cleared the position's trailing stop (%s): strategy B's 2 ETH of it trail no more", set)
	require.Empty(t, cancelIDs(cancel.Cancelled))
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'open'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:share-a-cancel' AND event = 'cancelled'
		AND detail->'exits_kept_position' = '["`+aTrailing+`"]'`), "the cancel names the setting it kept")

	mine, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "b", "share-b-cancel")))
	require.NoError(t, err)
	require.Empty(t, cancelIDs(mine.Cancelled))
	require.True(t, b.bybit.TrailingStop("ETHUSDT").Equal(set))

	all, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "", "share-cancel-all")))
	require.NoError(t, err)
	// The position trailed by A's distance (the last set): A's is
	// cancelled, B's (replaced at Bybit already) ends expired.
	require.Equal(t, []string{aTrailing}, cancelIDs(all.Cancelled))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+bTrailing+`' AND status = 'expired'`))
	require.True(t, b.bybit.TrailingStop("ETHUSDT").IsZero(), "a cancel without strategy clears it")
}

// One strategy alone on a Bybit position: its cancel, under its name,
// clears the trailing stop its long set (nobody else's is on the
// position), as a cancel without strategy does.
func TestStrategysCancelClearsTheBybitTrailingStopOnlyItSet(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	bLong, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"long","quantity":"2",
		"trailing_stop":{"percent":1.2345},"strategy":"b","trace_id":"alone-b"}`))
	require.NoError(t, err)
	require.Len(t, bLong.Legs, 1)
	aEntry, err := b.svc.Execute(ctx, input(t, restingEntries["bybit"]+`,"strategy":"a","trace_id":"alone-a"}`))
	require.NoError(t, err)

	// A's cancel takes A's resting entry and leaves B's setting.
	cancel, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "a", "alone-a-cancel")))
	require.NoError(t, err)
	require.Equal(t, []string{aEntry.Order.ClientOrderID}, cancelIDs(cancel.Cancelled))
	require.Equal(t, "37.03", b.bybit.TrailingStop("ETHUSDT").String())

	mine, err := b.svc.Execute(ctx, input(t, cancelOf("bybit", "b", "alone-b-cancel")))
	require.NoError(t, err)
	require.Equal(t, []string{bLong.Legs[0].ClientOrderID}, cancelIDs(mine.Cancelled))
	require.True(t, b.bybit.TrailingStop("ETHUSDT").IsZero(), "B's own cancel clears the trailing stop only B set")
}
