package jobs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/jobs"
)

// coarsenETH makes Binance coarsen ETHUSDT's LOT_SIZE step (and minimum)
// to 0.1; resting orders stay as they are.
func coarsenETH(f *binancefake.Server) {
	for _, s := range binancefake.DefaultSymbols() {
		if s.Symbol == "ETHUSDT" {
			s.StepSize, s.MinQty = decimal.RequireFromString("0.1"), decimal.RequireFromString("0.1")
			f.SetSymbol(s)
		}
	}
}

// A Binance spot limit buy of 1.234 ETH rests as 1.23 (ETHUSDT's 0.01
// step). Binance coarsens the step to 0.1 and then fills the buy. The
// follow job of a replica with fresh filters looks it up and records the
// fill: re-rounding the signal's 1.234 to the new step (1.2) would call the
// order hoox placed a mismatch, snooze on it at every look, and never place
// the entry's stop-loss, leaving 1.23 ETH bought and unprotected.
func TestBinanceSpotLimitEntryFilledAfterAStepChangeIsRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.Zero)
	fb := followOn(t, b, binanceVenues(t, f, binance.MarketSpot), nil)

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1.234",
		"order_type":"limit","price":"2990","stop_loss":"2800","trace_id":"step-lim"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	require.Equal(t, "1.23", f.Orders()[0].Quantity.String())

	coarsenETH(f)
	require.NoError(t, f.FillOrder(out.Order.ClientOrderID))

	// A restarted replica (fresh filters) follows the entry.
	w := jobs.NewFollowWorker(fb.pool, jobs.Config{}, binanceVenues(t, f, binance.MarketSpot), nil, nil)
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
	tx, err := fb.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	res, err := worker.Work(ctx, t, tx, fb.queuedFollow(t, "k:step-lim"), nil)
	require.NoError(t, err, "the entry hoox placed is not a mismatch")
	t.Logf("follow job: %s", res.EventKind)

	row, err := db.GetOrder(ctx, fb.pool, out.Order.ClientOrderID)
	require.NoError(t, err)
	require.Equal(t, "filled", row.Status)
}

// A Binance spot lone stop-loss rests (0.99 ETH: a 1 ETH buy net of its
// 0.1 % ETH fee, on ETHUSDT's 0.01 step). Binance then coarsens ETHUSDT's
// step to 0.1; resting orders stay as they are. A replica that reads the
// filters afresh (a restart, or the filter cache's hour) follows the stop:
// re-rounding the leg's 0.99 to the new step (0.9) would call the stop
// hoox placed a mismatch, and the follow job would record it expired ("the
// venue no longer holds the exit") and stop following it — while Binance
// still holds it and sells the coins when the price falls through 2800,
// a sale hoox never records. The stop is found open instead.
func TestBinanceSpotExitStillRestingAfterAStepChangeIsNotRecordedExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	f.SetSpotCommission(decimal.RequireFromString("0.001"))
	fb := followOn(t, b, binanceVenues(t, f, binance.MarketSpot), nil)

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2800","trace_id":"step-sl"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	sl := out.Legs[0].ClientOrderID
	held := f.Orders()
	require.Equal(t, "STOP_LOSS", held[len(held)-1].Type)
	require.Equal(t, "0.99", held[len(held)-1].Quantity.String())
	// The stop has rested a while (past the accept window).
	_, err = fb.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '1 hour' WHERE trace_id = 'k:step-sl'`)
	require.NoError(t, err)

	// Binance coarsens the step; the stop keeps resting.
	coarsenETH(f)

	// A restarted replica (fresh filters) follows the stop.
	w := jobs.NewFollowWorker(fb.pool, jobs.Config{}, binanceVenues(t, f, binance.MarketSpot), nil, nil)
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
	tx, err := fb.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = worker.Work(ctx, t, tx, fb.queuedFollowOf(t, sl), nil)
	require.NoError(t, err)

	row, err := db.GetOrder(ctx, fb.pool, sl)
	require.NoError(t, err)
	require.Equal(t, "open", row.Status,
		"Binance still holds the stop-loss hoox placed; it must not be recorded ended and unfollowed")
}

// misreading is a venue whose Lookup answers ErrMismatch: it holds (or
// hoox reads) another order under the ID than the one hoox sent.
type misreading struct{ exchange.Venue }

func (m misreading) Lookup(_ context.Context, o exchange.Order) (exchange.Report, error) {
	return exchange.Report{}, fmt.Errorf("test: %w: client order id %s is held as another order", exchange.ErrMismatch, o.ClientOrderID)
}

// An exit past its accept window under whose ID the venue answers
// another order (ErrMismatch) is not recorded expired: that proves
// nothing about the exit hoox placed — hoox may read its own order wrongly
// (as after a step change) — and recorded ended, an exit the venue still
// holds would sell unrecorded and unfollowed. It stays open and followed
// for an operator.
func TestExitHeldAsAnotherOrderIsLeftOpenForAnOperator(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{})
	f.SetSpotCommission(decimal.Zero)
	fb := followOn(t, b, binanceVenues(t, f, binance.MarketSpot), nil)

	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2800","trace_id":"mismatch-sl"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	sl := out.Legs[0].ClientOrderID
	_, err = fb.pool.Exec(ctx, `UPDATE orders SET created_at = created_at - interval '1 hour' WHERE trace_id = 'k:mismatch-sl'`)
	require.NoError(t, err)

	v, ok := binanceVenues(t, f, binance.MarketSpot).For("binance", false)
	require.True(t, ok)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance": misreading{v}})
	w := jobs.NewFollowWorker(fb.pool, jobs.Config{}, venues, nil, nil)
	worker := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
	tx, err := fb.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	res, err := worker.Work(ctx, t, tx, fb.queuedFollowOf(t, sl), nil)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "still followed")

	row, err := db.GetOrder(ctx, fb.pool, sl)
	require.NoError(t, err)
	require.Equal(t, "open", row.Status, "a mismatch is left for an operator, not recorded ended")
	require.Nil(t, row.UnfollowedAt)
}
