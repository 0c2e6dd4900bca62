package jobs_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/jobs"
)

// Once one exit of an entry is recorded filled, its siblings protect
// nothing (follow.go, cancelSiblings: a USDⓈ-M stop-loss left resting
// "would cut into the next position of the symbol"). cancelSiblings
// reaches only the siblings recorded open; a sibling still planned — its
// first send never reached Binance, the leg is left to the sweeper — is
// settled not_placed by LegRunner.Finish, never placed as a fresh
// reduce-only stop-loss for a position that is gone.
func TestPlannedExitIsNotPlacedAfterItsSiblingFilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, venues, out := filledFuturesEntryWithExits(t, "sibling-filled")
	entry := out.Order.ClientOrderID
	var lockKey, tp, sl, mode string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, mode, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &mode, &tp))
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 2`, entry).Scan(&sl))

	// The follow job's pass: the take-profit goes out, the stop-loss's
	// send never reaches Binance (left planned, for the sweeper).
	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	flaky := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": failPlacing{Venue: raw, id: sl}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, flaky, nil, nil).Finish(ctx, lockKey, entry)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Equal(t, "open", orderStatus(t, b, tp))

	// The take-profit triggers and its follow job records it filled: the
	// position is closed.
	f.MovePrice("ETHUSDT", decimal.RequireFromString("3300"))
	legOrder, err := db.GetLegOrder(ctx, b.pool, tp)
	require.NoError(t, err)
	_, err = fb.work(t, jobs.FollowArgs{ClientOrderID: tp, TraceID: out.TraceID, Exchange: "binance-futures", Mode: mode, Order: legOrder})
	require.NoError(t, err)
	require.Equal(t, "filled", orderStatus(t, b, tp))
	require.True(t, f.Position("ETHUSDT").IsZero(), "the take-profit closed the position")

	// The sweeper finishes the open leg.
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	for _, a := range f.AlgoOrders() {
		require.Falsef(t, a.ClientAlgoID == sl && a.Status == "NEW",
			"a stop-loss of %s rests at Binance for a position its take-profit already closed", a.Quantity)
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE client_order_id = $1 AND outcome = 'not_placed'`, sl),
		"the stop-loss is settled not_placed")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_events
WHERE trace_id = $1 AND event = 'leg_failed' AND detail->>'client_order_id' = $2 AND detail->>'reason' LIKE '%' || $3 || '%'`,
		out.TraceID, sl, tp), "the audit says the stop-loss was not placed because the take-profit filled")
}

// orderStatus is the recorded status of the order clientOrderID.
func orderStatus(t *testing.T, b *testBundle, clientOrderID string) string {
	t.Helper()
	o, err := db.GetOrder(context.Background(), b.pool, clientOrderID)
	require.NoError(t, err)
	return o.Status
}

// A cancel signal "leaves no hoox order of its symbol resting — it cancels
// the exits of a filled entry too" (migration 00018, docs/DECISIONS.md).
// The exits of an entry that filled earlier but are still only planned
// (their first send never reached Binance; the sweeper finishes them) are
// settled not_placed by the cancel, with a leg_failed event naming it on
// the entry's trace: the sweeper does not place them after it.
func TestCancelLeavesNoPlannedExitToBePlacedAfterIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, venues, out := filledFuturesEntryWithExits(t, "cancel-planned-exits")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	// The pass after the fill: the take-profit's send never reaches
	// Binance; both exits stay planned, for the sweeper.
	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	flaky := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": failPlacing{Venue: raw, id: tp}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, flaky, nil, nil).Finish(ctx, lockKey, entry)
	require.ErrorIs(t, err, exchange.ErrUnreachable)
	require.Empty(t, f.AlgoOrders())

	// The trader cancels everything on ETHUSDT.
	cancel, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"cancel-planned-exits-all"}`))
	require.NoError(t, err)
	require.Empty(t, cancel.Cancelled, "nothing of ETHUSDT rests at Binance when the cancel runs")

	// The sweeper finishes the open legs.
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	require.Empty(t, f.AlgoOrders(), "exits placed after the cancel signal that was to leave none resting")
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = $1 AND outcome = 'not_placed'`, entry),
		"both exits are settled not_placed")
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM trace_events
WHERE trace_id = $1 AND event = 'leg_failed' AND detail->>'cancelled_by' = $2`, out.TraceID, cancel.TraceID),
		"the entry's audit names the cancel that dropped each exit")
	require.EqualValues(t, 2, count(t, b.pool, `SELECT jsonb_array_length(detail->'exits_not_placed') FROM trace_events
WHERE trace_id = $1 AND event = 'cancelled'`, cancel.TraceID), "the cancel's audit names the exits it dropped")
}

// failPlacing is a Binance venue whose placement of one client order ID
// never reaches Binance (a 429 before acceptance, a refused connection).
type failPlacing struct {
	*binance.Venue
	id string
}

func (v failPlacing) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.ClientOrderID == v.id {
		return exchange.Report{}, fmt.Errorf("drill: %w", exchange.ErrUnreachable)
	}
	return v.Venue.Place(ctx, o)
}

// refusesLateExits is a Binance USDⓈ-M venue taken to refuse a late algo
// order as its matching engine refuses a late plain order (-5028), so
// that an exit missing past its accept window is proven absent and sent
// again under its ID. Binance documents no such refusal for the Algo
// Order API (binance.Venue.RefusesLateRequest), so the real adapter's
// missing exits are never sent again; the tests of the leg runner's
// resend guards (the position read, the cap) run on this venue, which
// would resend them.
type refusesLateExits struct{ *binance.Venue }

func (refusesLateExits) RefusesLateRequest(exchange.Order) bool { return true }

// resendingExitVenues is fake f's USDⓈ-M market as refusesLateExits.
func resendingExitVenues(t *testing.T, f *binancefake.Server) *exchange.Registry {
	t.Helper()
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	return exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": refusesLateExits{v}})
}

// filledFuturesEntryWithExits places a limit long of 1 ETHUSDT with a
// take-profit and a stop-loss on the Binance USDⓈ-M fake under traceID,
// fills it at the venue and records the fill, which plans its exits
// (migration 00015) and leaves them open, as a follow job's commit does
// before its Finish.
func filledFuturesEntryWithExits(t *testing.T, traceID string) (*testBundle, *binancefake.Server, *followBundle, *exchange.Registry, *gateway.Outcome) {
	t.Helper()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000, tick 0.01, step 0.01
	venues := binanceVenues(t, f, binance.MarketFutures)
	fb := followOn(t, b, venues, nil)
	out, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3300","stop_loss":"2700","trace_id":"`+traceID+`"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	entry := out.Order.ClientOrderID
	require.NoError(t, f.FillOrder(entry))
	_, err = b.pool.Exec(ctx, `UPDATE orders SET status = 'filled', filled_quantity = quantity, fill_price = 2990, avg_price = 2990
WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	return b, f, fb, venues, out
}
