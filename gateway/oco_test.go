package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/signal"
)

// A Binance spot market buy with a take-profit (2 % from the fill) and a
// stop-loss (a price): the entry goes out plain, then both exits as ONE
// OCO order list (POST /api/v3/orderList/oco) whose listClientOrderId is
// the leg's client order ID: a LIMIT_MAKER at the take-profit above the
// market and a STOP_LOSS below it, for what the entry received net of its
// commission (charged in ETH), rounded down to the step. A list for the
// whole 2 ETH would be refused for want of balance (0.002 ETH went to the
// fee), leaving the position unprotected.
func TestBinanceSpotEntryWithTakeProfitAndStopLossPlacesOneOCO(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetSpotCommission(d("0.001"))
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"2",
		"take_profit":{"percent":2},"stop_loss":"2900.004","trace_id":"oco-1"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, "3000", out.Order.FillPrice.Decimal.String())
	require.Len(t, b.binance.Orders(), 1, "the entry is the only plain order")
	lists := b.binance.OrderLists()
	require.Len(t, lists, 1, "one order list for both exits")
	l := lists[0]
	require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 1), l.ListClientOrderID)
	require.Len(t, l.ListClientOrderID, 32)
	require.Equal(t, "SELL", l.Side)
	require.Equal(t, "1.99", l.Quantity.String(), "2 ETH bought, 0.002 ETH fee, rounded down to 0.01")
	require.Equal(t, "LIMIT_MAKER", l.Above.Type)
	require.Equal(t, "3060", l.Above.Price.String(), "2 % above the fill")
	require.Equal(t, "STOP_LOSS", l.Below.Type)
	require.Equal(t, "2900.01", l.Below.StopPrice.String(), "rounded to the tick toward the entry")

	require.Len(t, out.Legs, 1)
	leg := out.Legs[0]
	require.Equal(t, exchange.RoleOCO, leg.Role)
	require.Equal(t, "open", leg.Status, "resting until one side executes")
	require.Equal(t, "3060", leg.TakeProfit.Decimal.String())
	require.Equal(t, "2900.01", leg.StopLoss.Decimal.String())
	attached := leg.Attached()
	require.Len(t, attached, 2)
	require.Equal(t, exchange.RoleTakeProfit, attached[0].Role)
	require.Equal(t, exchange.RoleStopLoss, attached[1].Role)
	require.Equal(t, l.ListClientOrderID, attached[1].ClientOrderID)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:oco-1' AND role = 'oco' AND outcome = 'dispatched'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:oco-1' AND role = 'oco' AND quantity = 1.99`))

	// The repeat places nothing more.
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"2",
		"take_profit":{"percent":2},"stop_loss":"2900.004","trace_id":"oco-1"}`))
	require.Error(t, err)
	require.Len(t, b.binance.OrderLists(), 1)
}

// A stop-loss the fill already passed (a buy filled at 3000 with a stop at
// 3100) is not sent: the list would be refused, and the entry stays
// recorded with the failure in the audit.
func TestBinanceSpotOCOOnTheWrongSideOfTheFillIsNotSent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"3100","trace_id":"oco-wrong"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Empty(t, out.Legs)
	require.Empty(t, b.binance.OrderLists(), "nothing sent")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:oco-wrong' AND event = 'leg_failed'`))
}

// Binance spot may still book a request that arrives late (its recvWindow
// checks end before the matching engine), so an OCO whose answer was lost
// and which the venue does not hold after its accept window is a missed
// order: the leg ends failed for an operator and is never sent again
// (a second list could sell the coins twice once the first turned up).
// Inside the window a pass only waits.
func TestBinanceSpotOCOLostAndMissingAfterItsWindowEndsFailedNotResent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.LoseNextOrderList()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"oco-lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status, "the entry executed")
	require.Empty(t, out.Legs, "the list's fate is unknown")
	require.Empty(t, b.binance.OrderLists())
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:oco-lost' AND sent_at IS NOT NULL AND outcome IS NULL`))

	var lockKey, parent string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key, parent_client_order_id FROM order_legs WHERE trace_id = 'k:oco-lost'`).Scan(&lockKey, &parent))
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.ErrorIs(t, err, jobs.ErrNotYet, "inside the accept window the list may still appear")

	_, err = b.pool.Exec(ctx, `UPDATE order_legs SET sent_at = now() - interval '10 minutes' WHERE trace_id = 'k:oco-lost'`)
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, parent)
	require.NoError(t, err)
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:oco-lost' AND outcome = 'failed'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:oco-lost' AND event = 'leg_failed'`))
	require.Empty(t, b.binance.OrderLists(), "never sent again")
	require.Equal(t, 1, b.binance.Requests("/api/v3/orderList/oco"))
}

// A cancel signal reaches a Binance spot entry's OCO list, which rests
// under its leg's client order ID (listClientOrderId, not an order's
// clientOrderId): it is cancelled through DELETE /api/v3/orderList
// (rest-api.md "Cancel Order list"), listed in the answer and recorded
// cancelled; the plain cancel endpoint would not find it and the list
// would keep the coins locked. A second cancel finds nothing open.
func TestCancelReachesBinanceSpotOCO(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":"3300","stop_loss":"2700","trace_id":"oco-c"}`))
	require.NoError(t, err)
	require.Len(t, entry.Legs, 1)

	// The list sells 0.99 ETH of the 0.999 the strategy holds (1 bought
	// less the 0.001 fee, down to the step): a close counts it as sold
	// and finds only 0.009 to sell, below the step: nothing is sent.
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"oco-close-1"}`))
	var gerr *gateway.Error
	require.ErrorAs(t, err, &gerr)
	require.Equal(t, codes.OrderRejected, gerr.Code, gerr.Detail)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"oco-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, []string{entry.Legs[0].ClientOrderID}, cancelIDs(out.Cancelled))
	require.Equal(t, "cancelled", out.Cancelled[0].Status)
	lists := b.binance.OrderLists()
	require.Len(t, lists, 1)
	require.Equal(t, "ALL_DONE", lists[0].Status, "no longer resting at the venue")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'oco' AND status = 'cancelled' AND cancelled_by = 'k:oco-cancel'`))

	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"oco-cancel-2"}`))
	require.NoError(t, err)
	require.Empty(t, out.Cancelled)

	// With the list cancelled, the close sells what the strategy bought
	// (0.999, down to the step).
	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"oco-close-2"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", out.Order.Status)
	require.Equal(t, "0.99", out.Order.Quantity.String())
}

// On spot a sell opens no position to protect: exits on it are refused
// before anything is claimed or sent.
func TestBinanceSpotSellWithExitsIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	_, err := b.svc.Execute(context.Background(), input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"sell","quantity":"1",
		"take_profit":"2700","stop_loss":"3300","trace_id":"oco-sell"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Unsupported, ge.Code)
	require.Contains(t, ge.Detail, "a spot sell opens no position")
	require.Empty(t, b.binance.Orders())
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`))
}
