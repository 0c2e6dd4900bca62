package gateway_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// A USDⓈ-M market entry with a trailing stop of 1.25 % and a stop-loss:
// after the entry fills, the trailing stop goes out as a reduce-only
// TRAILING_STOP_MARKET algo order of the filled quantity with callbackRate
// 1.2 (rounded down to Binance's one decimal: tighter, never looser), under
// its own client order ID, and the answer lists it beside the stop-loss.
// A cancel reaches it like the other exits.
func TestBinanceFuturesEntryWithTrailingStopPlacesATrailingAlgoOrder(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"short","quantity":"2",
		"stop_loss":"3100","trailing_stop":{"percent":1.25},"trace_id":"trail-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Len(t, b.binance.Orders(), 1, "the entry is the only plain order")
	algos := b.binance.AlgoOrders()
	require.Len(t, algos, 2)
	ts := algos[1]
	require.Equal(t, "TRAILING_STOP_MARKET", ts.Type)
	require.Equal(t, "1.2", ts.CallbackRate.String())
	require.Equal(t, "BUY", ts.Side, "a short's trailing stop buys back")
	require.Equal(t, "2", ts.Quantity.String())
	require.True(t, ts.ReduceOnly)
	require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 2), ts.ClientAlgoID)
	require.Len(t, out.Legs, 2)
	require.Equal(t, exchange.RoleTrailingStop, out.Legs[1].Role)
	require.Equal(t, "open", out.Legs[1].Status, "resting until triggered")
	require.Equal(t, "1.2", out.Legs[1].CallbackRate.Decimal.String())
	require.Equal(t, []db.AttachedExit{{Role: exchange.RoleTrailingStop, CallbackRate: out.Legs[1].CallbackRate,
		Status: db.AttachedPlaced, ClientOrderID: ts.ClientAlgoID, ExchangeOrderID: *out.Legs[1].ExchangeOrderID}}, out.Legs[1].Attached())

	cancel, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"trail-cancel"}`))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{out.Legs[0].ClientOrderID, out.Legs[1].ClientOrderID}, cancelIDs(cancel.Cancelled))
	for _, a := range b.binance.AlgoOrders() {
		require.Equal(t, "CANCELED", a.Status, "%s no longer rests at the venue", a.ClientAlgoID)
	}
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'cancelled'
		AND callback_rate = 1.2`))
}

// A trailing stop Binance cannot hold is refused with 422 before anything
// is claimed or sent: a price distance (Binance trails by a percent only)
// and a percent outside callbackRate's 0.1–10 range.
func TestBinanceFuturesTrailingStopOutsideTheVenueRulesIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	for i, tt := range []struct{ members, detail string }{
		{`"trailing_stop":{"distance":30}`, binance.ReasonTrailingDistance},
		{`"trailing_stop":{"percent":0.05}`, "outside binance-futures' callbackRate range 0.1 to 10"},
		{`"trailing_stop":"10.5%"`, "outside binance-futures' callbackRate range 0.1 to 10"},
	} {
		_, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
			`{"exchange":"binance-futures","symbol":"ETHUSDT","action":"buy","quantity":"1","trace_id":"trail-refuse-%d",%s}`, i, tt.members)))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tt.members)
		require.Equal(t, codes.Unsupported, ge.Code, tt.members)
		require.Contains(t, ge.Detail, tt.detail)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "nothing claimed")
	require.Empty(t, b.binance.Orders(), "nothing sent")
	require.Empty(t, b.binance.AlgoOrders())
}

// An okx-swap entry with a take-profit, a stop-loss and a trailing stop:
// OKX takes the take-profit and the stop-loss on the entry
// (attachAlgoOrds), the trailing stop only as its own algo order, so the
// gateway plans only the trailing stop as a leg, placed once the entry
// filled: a reduce-only move_order_stop for what filled, callbackRatio =
// percent / 100, under the leg's client order ID. The answer shows it with
// its rate; the cancel action reaches it through OKX's algo cancel.
func TestOKXSwapEntryWithTrailingStopPlacesOneAlgoOrderBesideTheAttachedExits(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"take_profit":"62000","stop_loss":"2%","trailing_stop":{"percent":1.5},"trace_id":"okx-trail-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	entries := b.okx.Orders()
	require.Len(t, entries, 1, "the entry is the only plain order")
	require.Equal(t, "62000", entries[0].TpTriggerPx.String(), "the take-profit stays on the entry")
	require.Equal(t, "58800", entries[0].SlTriggerPx.String(), "the stop-loss stays on the entry, 2 % below the last price")
	algos := b.okx.TrailingStops()
	require.Len(t, algos, 1, "one trailing stop")
	ts := algos[0]
	require.Equal(t, "move_order_stop", ts.OrdType)
	require.Equal(t, "0.015", ts.CallbackRatio.String())
	require.Equal(t, "sell", ts.Side, "a long's trailing stop sells")
	require.Equal(t, "3", ts.Sz.String(), "0.03 BTC filled: 3 contracts")
	require.True(t, ts.ReduceOnly)
	require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 1), ts.AlgoClOrdID)
	require.Len(t, out.Legs, 1)
	require.Equal(t, exchange.RoleTrailingStop, out.Legs[0].Role)
	require.Equal(t, "open", out.Legs[0].Status, "resting until triggered")
	require.Equal(t, "1.5", out.Legs[0].CallbackRate.Decimal.String())
	require.Equal(t, []db.AttachedExit{{Role: exchange.RoleTrailingStop, CallbackRate: out.Legs[0].CallbackRate,
		Status: db.AttachedPlaced, ClientOrderID: ts.AlgoClOrdID, ExchangeOrderID: ts.AlgoID}}, out.Legs[0].Attached())
	roles := map[string]bool{}
	for _, a := range out.Order.Attached() {
		roles[a.Role] = true
	}
	require.Equal(t, map[string]bool{exchange.RoleTakeProfit: true, exchange.RoleStopLoss: true}, roles, "the entry shows its own exits")

	cancel, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"cancel","trace_id":"okx-trail-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, []string{ts.AlgoClOrdID}, cancelIDs(cancel.Cancelled))
	require.Equal(t, "canceled", b.okx.TrailingStops()[0].State, "no longer rests at OKX")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND status = 'cancelled'
		AND callback_rate = 1.5`))
}

// A trailing stop hoox does not place on OKX is refused with 422 before
// anything is claimed or sent: any trailing stop on okx spot, and one on a
// close.
func TestOKXTrailingStopHooxDoesNotPlaceIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	for i, tt := range []struct{ exchange, members, detail string }{
		{"okx", `"trailing_stop":{"percent":1}`, okx.ReasonTrailingSpot},
		{"okx", `"trailing_stop":{"distance":30}`, okx.ReasonTrailingSpot},
	} {
		_, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
			`{"exchange":%q,"symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"okx-trail-refuse-%d",%s}`, tt.exchange, i, tt.members)))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tt.members)
		require.Equal(t, codes.Unsupported, ge.Code, tt.members)
		require.Equal(t, tt.detail, ge.Detail)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "nothing claimed")
	require.Empty(t, b.okx.Orders(), "nothing sent")
	require.Empty(t, b.okx.TrailingStops())
}

// An OKX trailing stop whose request timed out (50004: "does not mean that
// the request was successful or failed") and that OKX does not show: inside
// the accept window the leg waits; after it, the leg ends failed for an
// operator and is never sent again — OKX's algo endpoint takes no expTime,
// so the first request may still be booked and a second would make two
// stops for one.
func TestOKXTrailingStopLostAndMissingAfterItsWindowEndsFailedNotResent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.okx.TimeOutNextAlgo()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",
		"trailing_stop":"1.5%","trace_id":"okx-trail-lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "the entry executed")
	require.Empty(t, out.Legs, "the trailing stop's fate is unknown")
	require.Empty(t, b.okx.TrailingStops())

	var lockKey, parent string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id FROM order_legs WHERE trace_id = 'k:okx-trail-lost'`).Scan(&lockKey, &parent))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.ErrorIs(t, err, jobs.ErrNotYet, "inside the accept window the stop may still appear")

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:okx-trail-lost'`)
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:okx-trail-lost' AND outcome = 'failed'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-trail-lost' AND event = 'leg_failed'`))
	require.Empty(t, b.okx.TrailingStops(), "never sent again")
	require.Equal(t, 1, b.okx.AlgoPlacements())
}

// An okx-swap short with a trailing stop given as a price distance: the
// stop buys back, trailing by callbackSpread — the distance rounded down
// to the tick — and is recorded and shown with it as trailing_distance.
func TestOKXSwapTrailingStopByDistanceTrailsByCallbackSpread(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"short","quantity":"0.02",
		"trailing_stop":{"distance":"250.37"},"trace_id":"okx-trail-dist"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	algos := b.okx.TrailingStops()
	require.Len(t, algos, 1)
	require.Equal(t, "250.3", algos[0].CallbackSpread.String(), "down to the 0.1 tick")
	require.True(t, algos[0].CallbackRatio.IsZero())
	require.Equal(t, "buy", algos[0].Side)
	require.Len(t, out.Legs, 1)
	attached := out.Legs[0].Attached()
	require.Len(t, attached, 1)
	require.Equal(t, "250.3", attached[0].TrailingDistance.Decimal.String())
	require.False(t, attached[0].CallbackRate.Valid)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'trailing_stop' AND trailing_distance = 250.3
		AND callback_rate IS NULL`))
}

// A percent OKX refuses for its trailing stop (51257: outside its callback
// range, which its docs do not give) is found only once the entry filled:
// the entry stays, and the trailing stop is recorded rejected — shown as
// not_placed in the answer, with OKX's reason — never left looking placed.
func TestOKXTrailingStopOutsideOKXsRangeIsShownNotPlaced(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.okx.SetCallbackRange(okxfake.CallbackRange{Min: decimal.RequireFromString("0.001"), Max: decimal.RequireFromString("0.05")})
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.01",
		"trailing_stop":"8%","trace_id":"okx-trail-range"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "the entry executed")
	require.Equal(t, "filled", out.Order.Status)
	require.Empty(t, b.okx.TrailingStops())
	require.Len(t, out.Legs, 1)
	require.Equal(t, "rejected", out.Legs[0].Status)
	require.Contains(t, *out.Legs[0].RejectReason, "callback rate")
	attached := out.Legs[0].Attached()
	require.Len(t, attached, 1)
	require.Equal(t, db.AttachedNotPlaced, attached[0].Status)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-trail-range' AND event = 'leg_rejected'`))
}
