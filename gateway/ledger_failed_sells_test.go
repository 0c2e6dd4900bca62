package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
)

// A Binance spot close whose request reached the API but not yet the
// matching engine (-1007, booked an hour later: Binance spot books a late
// request, CHANGELOG.md 2025-08-12) is never seen by the sweeper: past the
// accept window it ends failed, a missed trade, its sell still possibly at
// the venue. The strategy's next close must count it as sold (422, nothing
// sent) until it is decided: when Binance books it an hour later it sells
// the strategy's 0.01 BTC, not a second 0.01 out of the trader's own 5.
// Before the fix a failed intent was no pending sell: the second close sold
// the 0.01 again, and the late one the trader's.
func TestCloseAfterAMissedSpotCloseDoesNotSellItsCoinsAgain(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	b.binance.SetSpotCommission(decimal.Zero) // no fee: the ledger's arithmetic is under test
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetBalance("BTC", d("5")) // the trader's own
	_, err := b.svc.Execute(ctx, input(t, spotSignal("buy", "0.010", "swing", "missed-buy")))
	require.NoError(t, err)

	b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultLateInEngine, Delay: time.Hour})
	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close")))
	var gerr *gateway.Error
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Equal(t, codes.Unavailable, gerr.Code, "no reconciler runs here: the intent stays open")
	require.Equal(t, 1, b.binance.PendingInEngine(), "the close waits in Binance's matching engine")

	// Past the accept window the sweeper finds nothing at a venue that may
	// book late: the close is a missed trade (failed, order unknown).
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:missed-close'`)
	require.NoError(t, err)
	sweeper := jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, nil)
	_, err = sweeper.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:missed-close' AND outcome = 'failed'`))
	require.Equal(t, "0.01", ledgerOf(t, b, "binance", "BTCUSDT", "swing"), "no fill recorded")

	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close-again")))
	t.Logf("second close: %v; BTC %s", err, b.binance.Balance("BTC"))
	require.Truef(t, errors.As(err, &gerr), "the second close was placed (%v): the missed close's 0.01 BTC was not counted as sold", err)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)
	require.Contains(t, gerr.Detail, "not recorded yet")

	// Binance books the first close after all.
	b.binance.Advance(time.Hour)
	require.Equal(t, 0, b.binance.PendingInEngine())
	require.Truef(t, b.binance.Balance("BTC").Equal(d("5")),
		"the account holds %s BTC: the strategy held 0.01, and its closes sold more, out of the trader's own 5", b.binance.Balance("BTC"))

	// The sweeper asks again and records it: the reservation ends with the
	// fill, and the ledger shows the strategy holds nothing. (The fake's
	// clock moved an hour: the first ask resynchronises the adapter's.)
	for range 2 {
		_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET settled_at = now() - interval '1 hour' WHERE trace_id = 'k:missed-close'`)
		require.NoError(t, err)
		_, err = sweeper.Sweep(ctx)
		require.NoError(t, err)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:missed-close' AND outcome = 'dispatched'`))
	require.Equal(t, "0", ledgerOf(t, b, "binance", "BTCUSDT", "swing"))
	_, err = b.svc.Execute(ctx, input(t, spotSignal("close", "1", "swing", "missed-close-third")))
	require.True(t, errors.As(err, &gerr), "%v", err)
	require.Contains(t, gerr.Detail, "holds 0 BTC through hoox")
	require.NotContains(t, gerr.Detail, "not recorded yet", "the recorded close reserves nothing any more")
}
