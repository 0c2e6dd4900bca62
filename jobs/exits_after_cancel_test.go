package jobs_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/jobs"
)

// A cancel signal leaves no hoox order of its symbol resting: it cancels
// the recorded open ones and settles the exits no pass has sent
// (DropUnsentExitLegs). A take-profit given up during a query outage
// (failed, unknown) is neither: the cancel leaves it, and once Binance
// answers again AskUnknown opens it and the next pass places it — a
// reduce-only take-profit resting after the trader's cancel, on a position
// the trader now manages without it. The cancel now marks such a leg
// (db.MarkCancelledExitLegs): the sweeper never opens it again, and
// settles it not_placed once the venue proves it absent (refusesLateExits:
// Binance USDⓈ-M proves no algo order absent).
func TestReopenedExitIsNotPlacedAfterACancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, _, out := filledFuturesEntryWithExits(t, "exits-reopened-after-cancel")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	lossy := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": losePlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, lossy, nil, nil).Finish(ctx, lockKey, entry)
	require.Error(t, err)

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '2 hours' WHERE client_order_id = $1`, tp)
	require.NoError(t, err)
	down := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": lookupDown{Venue: raw}})
	_, _ = jobs.NewLegRunner(b.pool, nil, jobs.Config{SweepGiveUp: time.Hour}, down, nil, nil).Finish(ctx, lockKey, entry)
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'failed'`, tp))

	// The trader cancels the symbol's resting orders (the stop-loss, placed
	// by the give-up pass, is cancelled).
	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"exits-reopened-after-cancel-c"}`))
	require.NoError(t, err)
	t.Logf("cancel: %s, cancelled %d", cl.Status, len(cl.Cancelled))
	for _, a := range f.AlgoOrders() {
		require.NotEqual(t, "NEW", a.Status, "nothing rests after the cancel")
	}

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
	_, err = runner.Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.Status == "NEW", "a reduce-only %s %s of %s (%s) rests at Binance after the trader's cancel: the given-up exit was reopened and sent",
			a.Side, a.Type, a.Quantity, a.ClientAlgoID)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed' AND cancelled_by IS NOT NULL`, tp),
		"the given-up take-profit is settled not placed, marked by the cancel")
	require.EqualValues(t, 0, count(t, b.pool, `SELECT count(*) FROM trace_events WHERE event = 'leg_reopened' AND detail->>'client_order_id' = $1`, tp))
}

// placeLosingAnswer places order id at Binance and loses the answer (a read
// timeout after Binance took it).
type placeLosingAnswer struct {
	*binance.Venue
	id string
}

func (v placeLosingAnswer) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	r, err := v.Venue.Place(ctx, o)
	if o.ClientOrderID == v.id && err == nil {
		return exchange.Report{}, fmt.Errorf("drill: answer lost: %w", exchange.ErrUnknownOutcome)
	}
	return r, err
}

// The take-profit of a filled Binance USDⓈ-M entry is placed but its answer
// is lost: the leg is armed (sent, open) and not recorded, so the trader's
// cancel does not see it among the open orders, and DropUnsentExitLegs
// keeps it (it may exist). The cancel marks it (MarkCancelledExitLegs); the
// next pass finds it resting and cancels it at Binance, recorded cancelled
// by the cancel signal. Before, the pass adopted it as open: a reduce-only
// take-profit resting after the trader's cancel.
func TestArmedExitFoundAfterACancelIsCancelledAtTheVenue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, venues, out := filledFuturesEntryWithExits(t, "exits-armed-before-cancel")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	lossy := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": placeLosingAnswer{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, lossy, nil, nil).Finish(ctx, lockKey, entry)
	require.Error(t, err)
	resting := func() []string {
		var ids []string
		for _, a := range f.AlgoOrders() {
			if a.Status == "NEW" {
				ids = append(ids, a.ClientAlgoID)
			}
		}
		return ids
	}
	require.Equal(t, []string{tp}, resting(), "the take-profit rests at Binance, unrecorded")

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"exits-armed-before-cancel-c"}`))
	require.NoError(t, err)

	// The sweeper's pass, past the accept window.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE sent_at IS NOT NULL`)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	require.Empty(t, resting(), "nothing of ETHUSDT rests after the trader's cancel")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1 AND status = 'cancelled' AND cancelled_by = $2`, tp, cl.TraceID),
		"the take-profit is recorded cancelled by the cancel signal")
}
