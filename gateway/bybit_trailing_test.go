package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// A Bybit linear short with a trailing stop of 1.2345 %: the entry goes out
// plain (no trailing stop can ride on a Bybit order), and once it filled
// at 3000 the position's trailing stop is set once through trading-stop to
// 37.03 — 1.2345 % of the fill price, rounded down to the 0.01 tick
// (tighter, never looser). The answer lists it as a trailing_stop leg with
// its distance; a repeat of the signal sets nothing more; a cancel clears
// the setting (trailingStop 0) and records it cancelled.
func TestBybitEntryWithTrailingStopSetsThePositionsTrailingStopOnce(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	sig := `{"exchange":"bybit","symbol":"ETHUSDT","action":"short","quantity":"2","trailing_stop":{"percent":1.2345},"trace_id":"bt-1"}`
	out, err := b.svc.Execute(ctx, input(t, sig))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.bybit.Orders(), 1, "the entry is the only order")
	entry := b.bybit.Orders()[0]
	require.True(t, entry.TakeProfit.IsZero() && entry.StopLoss.IsZero(), "nothing rides on the entry")
	require.Equal(t, "37.03", b.bybit.TrailingStop("ETHUSDT").String())
	require.Equal(t, 1, b.bybit.TrailingStopSets("ETHUSDT"))

	require.Len(t, out.Legs, 1)
	leg := out.Legs[0]
	require.Equal(t, exchange.RoleTrailingStop, leg.Role)
	require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 1), leg.ClientOrderID)
	require.Equal(t, "open", leg.Status, "the position holds it until it triggers")
	require.Equal(t, "buy", leg.Side, "a short's trailing stop buys back")
	require.Equal(t, "37.03", leg.TrailingDistance.Decimal.String())
	require.Equal(t, []db.AttachedExit{{Role: exchange.RoleTrailingStop, TrailingDistance: leg.TrailingDistance,
		Status: db.AttachedPlaced, ClientOrderID: leg.ClientOrderID}}, leg.Attached())

	_, err = b.svc.Execute(ctx, input(t, sig))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Duplicate, ge.Code)
	require.Equal(t, 1, b.bybit.Requests(bybitfake.PathTradingStop), "a repeat sets nothing")

	cancel, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"cancel","trace_id":"bt-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, []string{leg.ClientOrderID}, cancelIDs(cancel.Cancelled))
	require.True(t, b.bybit.TrailingStop("ETHUSDT").IsZero(), "the position no longer trails")
	require.Equal(t, "Sell", b.bybit.Position("ETHUSDT").Side, "the position itself stays")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'cancelled'
		AND trailing_distance = 37.03 AND cancelled_by = 'k:bt-cancel'`))
}

// A trailing stop given as a distance is sent as that distance rounded
// down to the tick (45.67 → 45.6 on BTCUSDT's 0.10); a trailing stop that
// Bybit cannot hold is refused with 422 before anything is claimed, read
// or sent: on bybit-spot, and beside a take-profit or stop-loss on the
// entry (the two tpslModes on one position, which Bybit's docs do not
// promise to accept).
func TestBybitTrailingStopByDistanceAndItsRefusals(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	for i, tt := range []struct{ exchange, members, detail string }{
		{"bybit-spot", `"trailing_stop":{"percent":1}`, bybit.ReasonTrailingStop},
		{"bybit", `"trailing_stop":{"distance":50},"take_profit":"70000"`, bybit.ReasonTrailingWithTPSL},
		{"bybit", `"trailing_stop":"1%","stop_loss":{"percent":2}`, bybit.ReasonTrailingWithTPSL},
	} {
		_, err := b.svc.Execute(ctx, input(t, `{"exchange":"`+tt.exchange+`","symbol":"BTCUSDT","action":"buy","quantity":"0.01",
			"trace_id":"bt-refuse-`+string(rune('a'+i))+`",`+tt.members+`}`))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tt.members)
		require.Equal(t, codes.Unsupported, ge.Code, tt.members)
		require.Equal(t, tt.detail, ge.Detail)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "nothing claimed")
	require.Empty(t, b.bybit.Orders(), "nothing sent")
	require.Zero(t, b.bybit.Requests(bybitfake.PathTradingStop)+b.bybit.Requests(bybitfake.PathTickers), "not even a read")

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01",
		"trailing_stop":{"distance":"45.67"},"trace_id":"bt-dist"}`))
	require.NoError(t, err)
	require.Len(t, out.Legs, 1)
	require.Equal(t, "45.6", out.Legs[0].TrailingDistance.Decimal.String())
	require.Equal(t, "45.6", b.bybit.TrailingStop("BTCUSDT").String())
}

// The trading-stop answer is lost (Bybit set the trailing stop, hoox did
// not hear): the leg stays sent and undecided, and the next pass reads the
// position, finds its own distance and adopts it, setting nothing again.
// A second entry's leg whose answer is lost while the position closes
// before anyone looks is recorded expired — its setting went with the
// position, whether it triggered or not — and is never sent again; nor is
// it a lost order for an operator.
func TestBybitTrailingStopLostAnswerIsAdoptedAndAClosedPositionEndsIt(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil)
	finish := func(trace string) error {
		t.Helper()
		var lockKey, parent string
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id FROM order_legs WHERE trace_id = $1`, trace).Scan(&lockKey, &parent))
		_, err := runner.Finish(ctx, lockKey, parent)
		return err
	}

	b.bybit.Inject(bybitfake.PathTradingStop, 1, bybitfake.DropAfterAccept())
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01",
		"trailing_stop":{"percent":1},"trace_id":"bt-lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "the entry executed")
	require.Empty(t, out.Legs, "the trailing stop's fate is unknown")
	require.Equal(t, "600", b.bybit.TrailingStop("BTCUSDT").String(), "Bybit set it: 1 % of the 60000 fill")
	require.NoError(t, finish("k:bt-lost"))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:bt-lost' AND role = 'trailing_stop'
		AND status = 'open' AND trailing_distance = 600`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:bt-lost' AND event = 'leg_placed'
		AND (detail->>'adopted')::bool`))
	require.Equal(t, 1, b.bybit.TrailingStopSets("BTCUSDT"), "adopted, not set again")

	b.bybit.Inject(bybitfake.PathTradingStop, 1, bybitfake.DropAfterAccept())
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"bybit","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"trailing_stop":{"distance":20},"trace_id":"bt-gone"}`))
	require.NoError(t, err)
	require.Equal(t, "20", b.bybit.TrailingStop("ETHUSDT").String())
	b.bybit.SetPosition("ETHUSDT", "", decimal.Zero) // it triggered
	sets := b.bybit.Requests(bybitfake.PathTradingStop)
	require.NoError(t, finish("k:bt-gone"), "a closed position decides at once, accept window or not")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:bt-gone' AND role = 'trailing_stop'
		AND status = 'expired' AND trailing_distance = 20`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:bt-gone' AND outcome = 'dispatched'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:bt-gone' AND event = 'leg_failed'`))
	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:bt-gone'`)
	require.NoError(t, err)
	require.NoError(t, finish("k:bt-gone"))
	require.Equal(t, sets, b.bybit.Requests(bybitfake.PathTradingStop), "never sent again")
	var parent string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT parent_client_order_id FROM order_legs WHERE trace_id = 'k:bt-gone'`).Scan(&parent))
	rows, err := db.LegOrders(ctx, b.pool, parent)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, db.AttachedEnded, rows[0].Attached()[0].Status, "shown as no longer held")
}
