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
	"github.com/hoox/hoox/jobs"
)

// ambiguousPlacing is a Binance venue whose placement of one client order
// ID ends with no answer (a read timeout) — here without reaching Binance,
// as a request lost before the matching engine does.
type ambiguousPlacing struct {
	*binance.Venue
	id string
}

func (v ambiguousPlacing) Place(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if o.ClientOrderID == v.id {
		return exchange.Report{}, fmt.Errorf("drill: %w", context.DeadlineExceeded)
	}
	return v.Venue.Place(ctx, o)
}

// A limit long of 1 ETHUSDT with a take-profit and a stop-loss fills at
// Binance USDⓈ-M; before its exits are sent the strategy closes half of
// the long. The exits' first resolution reads the position (0.5) and caps
// them to it (jobs/legs.go resolveExit, Leg.Sends == 0). The take-profit's
// send gets no answer (it never reached Binance); past Binance's accept
// window the next pass finds nothing and sends again under the same ID —
// but resolveExit recomputes the quantity from the entry's fill (1), and
// with Sends > 0 no longer caps it: the resend is a reduce-only take-profit
// of 1 on a 0.5 long, not "the exit as first resolved" the comment promises.
func TestCappedExitIsResentUncapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, fb, _, out := filledFuturesEntryWithExits(t, "rr3-capped-resend")
	entry := out.Order.ClientOrderID
	var lockKey, tp string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &tp))

	cl, err := fb.gw.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"50%","trace_id":"rr3-capped-resend-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", cl.Order.Status)
	half := decimal.RequireFromString("0.5")
	require.True(t, f.Position("ETHUSDT").Equal(half), "the strategy closed half the long: %s", f.Position("ETHUSDT"))

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	flaky := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": ambiguousPlacing{Venue: raw, id: tp}})
	// The entry's fill was recorded a while ago: the position read is the
	// venue's settled one, so the exit is capped to it, not waited for.
	_, err = b.pool.Exec(ctx, `UPDATE orders SET updated_at = now() - interval '1 minute' WHERE client_order_id = $1`, entry)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, flaky, nil, nil).Finish(ctx, lockKey, entry)
	t.Logf("first pass: %v", err)
	first, err := db.GetLegOrder(ctx, b.pool, tp)
	require.NoError(t, err)
	t.Logf("take-profit as first resolved: quantity %s", first.Quantity)
	require.True(t, first.Quantity.Equal(half), "the first resolution is capped to the half held")

	// Past Binance's accept window: the next pass finds nothing and sends
	// again under the same ID.
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '1 hour' WHERE client_order_id = $1`, tp)
	require.NoError(t, err)
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, resendingExitVenues(t, f), nil, nil).Finish(ctx, lockKey, entry)
	t.Logf("second pass: %v", err)
	found := false
	for _, a := range f.AlgoOrders() {
		t.Logf("algo %s %s %s %s %s", a.ClientAlgoID, a.Side, a.Type, a.Quantity, a.Status)
		if a.ClientAlgoID != tp {
			continue
		}
		found = true
		require.Truef(t, a.Quantity.Equal(half), "the take-profit's same-ID resend is for %s, not the %s it was first resolved (and sent) with: the long held is %s",
			a.Quantity, half, f.Position("ETHUSDT"))
	}
	require.True(t, found, "the take-profit was resent")
}

// laggingPosition is a Binance USDⓈ-M venue whose first position read
// (positionRisk) does not show the fill yet: Binance documents
// positionRisk as not timely on its own ("Please use with user data
// stream ACCOUNT_UPDATE to meet your timeliness and accuracy needs").
type laggingPosition struct {
	*binance.Venue
	stale *int
}

func (v laggingPosition) SizingFacts(ctx context.Context, o exchange.Order, need exchange.SizingNeed) (exchange.SizingFacts, error) {
	f, err := v.Venue.SizingFacts(ctx, o, need)
	if err == nil && need.Position && *v.stale > 0 {
		*v.stale--
		f.Position = decimal.Zero
	}
	return f, err
}

// A limit long of 1 ETHUSDT with a take-profit and a stop-loss fills at
// Binance USDⓈ-M and its fill is recorded (the order query says FILLED).
// The exits' first pass reads the position before sending (resolveExit,
// Leg.Sends == 0), and that one read does not show the fill yet. The leg
// is then settled rejected for good ("the position ... is closed: not
// placed"): no pass ever asks again, and the open long of 1 has neither
// its stop-loss nor its take-profit. Before 3b44dd6 the exits were placed.
func TestExitRefusedForGoodOnOneStalePositionRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, venues, out := filledFuturesEntryWithExits(t, "rr3-stale-position")
	entry := out.Order.ClientOrderID
	var lockKey string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey))
	require.True(t, f.Position("ETHUSDT").Equal(decimal.NewFromInt(1)), "the long is open at Binance")

	raw, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
	require.NoError(t, err)
	stale := 1
	lagging := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": laggingPosition{Venue: raw, stale: &stale}})
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, lagging, nil, nil).Finish(ctx, lockKey, entry)
	t.Logf("first pass: %v", err)
	// Later passes read the position as it is.
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	t.Logf("second pass: %v", err)

	rows, err := b.pool.Query(ctx, `SELECT role, coalesce(outcome, 'open') FROM order_legs WHERE parent_client_order_id = $1 ORDER BY seq`, entry)
	require.NoError(t, err)
	for rows.Next() {
		var role, outcome string
		require.NoError(t, rows.Scan(&role, &outcome))
		t.Logf("leg %s: %s", role, outcome)
	}
	require.NoError(t, rows.Err())
	resting := 0
	for _, a := range f.AlgoOrders() {
		if a.Status == "NEW" {
			resting++
		}
	}
	require.Equalf(t, 2, resting, "the open long of %s at Binance has %d of its 2 exits: one stale position read refused the other for good",
		f.Position("ETHUSDT"), resting)
}
