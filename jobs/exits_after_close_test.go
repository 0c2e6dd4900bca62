package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/jobs"
)

// A limit long of 1 ETHUSDT with a take-profit and a stop-loss fills at
// Binance USDⓈ-M; the first pass over its exits does not reach Binance
// (left planned, for the sweeper — as in
// TestPlannedExitIsNotPlacedAfterItsSiblingFilled). Before the sweeper's
// pass, the strategy closes the long (a plain close signal). The sweeper
// then places both exits — reduce-only SELL orders for 1 ETHUSDT — on the
// flat position, where they rest and cut the symbol's next long. The
// position they were to protect is gone: neither a sibling fill nor a
// cancel signal ended it, so neither check (FilledSiblingExit, the cancel's
// not_placed) stops them, and PositionBefore (read before the entry) says
// nothing about the position at the exits' send. Bybit's trailing leg reads
// the position at its send (bybit.placeTrailing) and sets nothing on a flat
// one; the Binance legs do not.
func TestPlannedExitsAreNotPlacedAfterThePositionWasClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, venues, out := filledFuturesEntryWithExits(t, "exits2-closed-before-legs")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	flaky := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": failPlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, flaky, nil, nil).Finish(ctx, lockKey, entry)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Empty(t, f.AlgoOrders())

	// The strategy exits: the long is closed.
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"exits2-close"}`))
	require.NoError(t, err)
	t.Logf("close: %s %s", cl.Status, cl.Order.Status)
	require.True(t, f.Position("ETHUSDT").IsZero(), "the close flattened the long")

	// The sweeper finishes the open legs, past its grace: the entry's fill
	// was recorded a while ago, so the position read is the settled one.
	_, err = b.pool.Exec(ctx, `UPDATE orders SET updated_at = now() - interval '1 minute' WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s rests at Binance on the flat ETHUSDT position (the long it was to protect was closed before it was sent)",
			a.Side, a.Type, a.Quantity)
	}
}

// The same without any fault. A limit long with a take-profit and a
// stop-loss rests at Binance USDⓈ-M; it fills, and before its follow job's
// next look (a quarter of the order's age, up to 5 minutes) the strategy's
// exit closes the long. The follow job then records the fill, which plans
// the exits, and its Finish places both — reduce-only SELL orders for the
// whole entry — on the flat position.
func TestLimitEntryClosedBeforeItsFillIsSeenGetsNoExits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, fb := futuresFollowing(t) // ETHUSDT at 3000
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"exits2-limit"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	entry := out.Order.ClientOrderID
	args := fb.queuedFollowOf(t, entry)

	require.NoError(t, f.FillOrder(entry))
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"100%","trace_id":"exits2-limit-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	require.True(t, f.Position("ETHUSDT").IsZero(), "the strategy's close flattened the long")

	_, err = fb.work(t, args)
	require.NoError(t, err)
	require.Equal(t, "filled", orderStatus(t, b, entry))
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s rests at Binance on the flat ETHUSDT position",
			a.Side, a.Type, a.Quantity)
	}
}

// losePlacing drops the request for order id on its way (a timeout before
// Binance took it): the answer is unknown, nothing is placed.
type losePlacing struct {
	*binance.Venue
	id string
}

func (v losePlacing) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.ClientOrderID == v.id {
		return exchange.Report{}, fmt.Errorf("drill: request lost: %w", exchange.ErrUnknownOutcome)
	}
	return v.Venue.Place(ctx, o)
}

// A limit long of 1 ETHUSDT with a take-profit and a stop-loss fills at
// Binance USDⓈ-M. The take-profit's send gets no answer (it never reached
// Binance), so the leg is armed, Sends = 1. Before the sweeper's pass the
// strategy closes the long. Past the accept window a venue that proves
// the take-profit absent (refusesLateExits; Binance USDⓈ-M does not for
// its algo orders) would send it
// again — a fresh placement, nothing can match it any more. The resend
// reads the position as a first send does (resolveExit, heldExit) and
// records the exit rejected: a reduce-only SELL TAKE_PROFIT_MARKET for 1
// resting on the flat position would cut the symbol's next long. Before
// the fix a leg with Sends > 0 skipped the read and was placed.
func TestResentExitIsNotPlacedAfterThePositionWasClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, _, out := filledFuturesEntryWithExits(t, "exits-resent-after-close")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	lossy := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": losePlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, lossy, nil, nil).Finish(ctx, lockKey, entry)
	require.Error(t, err)
	require.Empty(t, f.AlgoOrders(), "nothing reached Binance")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND sent_at IS NOT NULL AND outcome IS NULL`, tp))

	// The trader closes the long by hand (Binance's app). (hoox's own
	// close would mark the unknown take-profit ended by it, which stops
	// the resend before any read:
	// gateway TestFuturesWholeCloseStopsAnUnknownExitFromBeingSentAgain.
	// By hand, only the position read at the send stops it.)
	f.SetPosition("ETHUSDT", decimal.Zero)

	// The sweeper's pass, past Binance's accept window and the exits' lag.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET updated_at = now() - interval '10 minutes' WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, resendingExitVenues(t, f), nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s (%s) rests at Binance on the flat ETHUSDT position: the resent exit skipped the position read",
			a.Side, a.Type, a.Quantity, a.ClientAlgoID)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'rejected'`, tp),
		"the take-profit is recorded rejected, with why")
}

// lookupDown answers no order lookup (an outage of Binance's queries):
// what the leg runner gives a sent leg up for after SweepGiveUp.
type lookupDown struct {
	*binance.Venue
}

func (v lookupDown) Lookup(context.Context, exchange.Order) (exchange.Report, error) {
	return exchange.Report{}, fmt.Errorf("drill: queries down: %w", exchange.ErrUnreachable)
}

// The same through the give-up and the reopen (legs-unknown, liveness):
// the take-profit's send got no answer, Binance's order queries then fail
// for longer than SweepGiveUp and the leg is given up (failed, unknown).
// Meanwhile the strategy closes the long. Once Binance answers again and
// holds nothing under the ID, AskUnknown opens the leg again; the next
// pass reads the position before sending it and refuses it, where before
// the fix it sent it as first resolved: a reduce-only take-profit for the
// whole entry, hours later, on a flat position.
func TestReopenedExitIsNotPlacedAfterThePositionWasClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, _, out := filledFuturesEntryWithExits(t, "exits-reopened-after-close")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	lossy := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": losePlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, lossy, nil, nil).Finish(ctx, lockKey, entry)
	require.Error(t, err)
	require.Empty(t, f.AlgoOrders(), "nothing reached Binance")

	// Binance's queries fail for two hours: the leg is given up.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '2 hours' WHERE client_order_id = $1`, tp)
	require.NoError(t, err)
	down := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": lookupDown{Venue: raw}})
	_, _ = jobs.NewLegRunner(b.pool, nil, jobs.Config{SweepGiveUp: time.Hour}, down, nil, nil).Finish(ctx, lockKey, entry)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, tp),
		"given up while Binance could not be asked")

	// The trader closes the long by hand meanwhile (as in
	// TestResentExitIsNotPlacedAfterThePositionWasClosed: hoox's own close
	// would mark the leg, and it would not be reopened).
	f.SetPosition("ETHUSDT", decimal.Zero)
	for _, a := range f.AlgoOrders() {
		require.False(t, a.ClientAlgoID == tp, "the take-profit never reached Binance before the reopen")
	}

	// Binance answers again: the sweeper asks about the unknown leg, then
	// finishes the open legs.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET settled_at = now() - interval '1 hour' WHERE outcome = 'failed'`)
	require.NoError(t, err)
	_, err = b.pool.Exec(ctx, `UPDATE orders SET updated_at = now() - interval '3 hours' WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	unknown, err := db.ListUnknownLegs(ctx, b.pool, time.Minute, 10)
	require.NoError(t, err)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{SweepGiveUp: time.Hour}, resendingExitVenues(t, f), nil, nil)
	for _, l := range unknown {
		_, err := runner.AskUnknown(ctx, l)
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE event = 'leg_reopened' AND detail->>'client_order_id' = $1`, tp))
	_, err = runner.Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.ClientAlgoID == tp && a.Status == "NEW", "a reduce-only %s %s of %s (%s) rests at Binance on the flat ETHUSDT position: the reopened exit was sent without reading it",
			a.Side, a.Type, a.Quantity, a.ClientAlgoID)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'rejected'`, tp),
		"the take-profit is recorded rejected, with why")
}
