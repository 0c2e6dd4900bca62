package gateway_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/signal"
)

// A Binance spot buy with only a stop-loss, only a take-profit or only a
// trailing stop: the entry goes out plain, then the exit as ONE plain sell
// order under the leg's client order ID, for what the entry received net
// of its commission (2 ETH less 0.002 ETH, down to the step): a STOP_LOSS
// 2 % below the fill, a LIMIT_MAKER at the take-profit, a STOP_LOSS
// trailing by 150 BIPS. Each is recorded with its role and shown in the
// answer's legs; the repeat places nothing more.
func TestBinanceSpotLoneExitIsOneSellOrder(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	b.binance.SetSpotCommission(decimal.RequireFromString("0.001"))
	for _, tc := range []struct {
		trace, exit, role, typ string
		check                  func(t *testing.T, leg db.OrderRow, held exchangeOrder)
	}{
		{"lone-sl", `"stop_loss":"2%"`, exchange.RoleStopLoss, "STOP_LOSS", func(t *testing.T, leg db.OrderRow, held exchangeOrder) {
			require.Equal(t, "2940", held.StopPrice.String(), "2 % below the fill at 3000")
			require.Equal(t, "2940", leg.StopLoss.Decimal.String())
		}},
		{"lone-tp", `"take_profit":"3300"`, exchange.RoleTakeProfit, "LIMIT_MAKER", func(t *testing.T, leg db.OrderRow, held exchangeOrder) {
			require.Equal(t, "3300", held.Price.String(), "a maker sell resting at the target")
			require.Equal(t, "3300", leg.TakeProfit.Decimal.String())
		}},
		{"lone-trail", `"trailing_stop":{"percent":1.5}`, exchange.RoleTrailingStop, "STOP_LOSS", func(t *testing.T, leg db.OrderRow, held exchangeOrder) {
			require.EqualValues(t, 150, held.TrailingDelta)
			require.Equal(t, "1.5", leg.CallbackRate.Decimal.String())
		}},
	} {
		body := `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"2",` + tc.exit + `,"trace_id":"` + tc.trace + `"}`
		before := len(b.binance.Orders())
		out, err := b.svc.Execute(ctx, input(t, body))
		require.NoError(t, err, tc.trace)
		require.Equal(t, db.TraceDispatched, out.Status)
		orders := b.binance.Orders()[before:]
		require.Len(t, orders, 2, "%s: the entry and one exit order", tc.trace)
		held := orders[1]
		require.Equal(t, signal.LegClientOrderID(out.Order.ClientOrderID, 1), held.ClientOrderID)
		require.Equal(t, tc.typ, held.Type)
		require.Equal(t, "SELL", held.Side)
		require.Equal(t, "1.99", held.Quantity.String(), "2 ETH bought, 0.002 ETH fee, rounded down to 0.01")
		require.Equal(t, "NEW", held.Status)
		require.Empty(t, b.binance.OrderLists(), "no order list for a lone exit")

		require.Len(t, out.Legs, 1, tc.trace)
		leg := out.Legs[0]
		require.Equal(t, tc.role, leg.Role)
		require.Equal(t, "open", leg.Status)
		tc.check(t, leg, held)
		attached := leg.Attached()
		require.Len(t, attached, 1)
		require.Equal(t, tc.role, attached[0].Role)
		require.Equal(t, held.ClientOrderID, attached[0].ClientOrderID)
		require.NotEmpty(t, attached[0].ExchangeOrderID)

		_, err = b.svc.Execute(ctx, input(t, body))
		require.Error(t, err, "the repeat is a duplicate")
		require.Len(t, b.binance.Orders(), before+2, "%s: placed once", tc.trace)
		// Free the coins for the next case.
		require.NoError(t, b.binance.CancelOrder(held.ClientOrderID))
	}
}

// exchangeOrder names the fake's order type in these tests.
type exchangeOrder = binancefake.Order

// A lone stop-loss the fill already passed (a buy filled at 3000 with a
// stop at 3100) is not sent: Binance would refuse it ("Order would trigger
// immediately."); the failure is in the audit.
func TestBinanceSpotLoneStopOnTheWrongSideOfTheFillIsNotSent(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"3100","trace_id":"lone-wrong"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Empty(t, out.Legs)
	require.Len(t, b.binance.Orders(), 1, "only the entry")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:lone-wrong' AND event = 'leg_failed'`))
}

// The cancel action reaches a lone spot stop-loss (a plain order, DELETE
// /api/v3/order): it is listed cancelled, Binance no longer holds it, and
// the coins it locked are free again for a close.
func TestCancelReachesBinanceSpotLoneStopLoss(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2700","trace_id":"lone-c"}`))
	require.NoError(t, err)
	require.Len(t, entry.Legs, 1)
	stop := entry.Legs[0].ClientOrderID

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"lone-cancel"}`))
	require.NoError(t, err)
	require.Equal(t, []string{stop}, cancelIDs(out.Cancelled))
	require.Equal(t, "cancelled", out.Cancelled[0].Status)
	held := b.binance.Orders()
	require.Equal(t, "CANCELED", held[len(held)-1].Status, "no longer resting at the venue")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE role = 'stop_loss' AND status = 'cancelled' AND cancelled_by = 'k:lone-cancel'`))

	closed, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"lone-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", closed.Order.Status)
	require.Equal(t, "0.99", closed.Order.Quantity.String(), "all the strategy bought, net of the fee, down to the step")
}

// Exits the symbol's own rules would refuse once the entry filled are
// refused before anything is sent (422 order_rejected, the trace settled
// rejected): a trailing stop where the symbol takes none
// (allowTrailingStop false) or beyond its TRAILING_DELTA range (25 % is
// 2500 BIPS, above 2000), a lone stop-loss where STOP_LOSS is not among
// its orderTypes. Placing the entry would leave a position without the
// protection asked for.
func TestBinanceSpotExitsTheSymbolRefusesAreRefusedBeforeTheEntry(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	sol := binancefake.DefaultSymbols()[1]
	sol.Symbol, sol.Base, sol.AllowTrailingStop = "SOLUSDT", "SOL", false
	b.binance.SetSymbol(sol)
	btc := binancefake.DefaultSymbols()[0]
	btc.OrderTypes = []string{"LIMIT", "LIMIT_MAKER", "MARKET"}
	b.binance.SetSymbol(btc)
	for _, tc := range []struct{ trace, signal, detail string }{
		{"chk-trail", `"symbol":"SOLUSDT","trailing_stop":{"percent":1}`, "binance takes no trailing stops on SOLUSDT (allowTrailingStop)"},
		{"chk-wide", `"symbol":"ETHUSDT","trailing_stop":{"percent":25}`, "trailing stop of 2500 BIPS (25 %) is outside ETHUSDT's TRAILING_DELTA range 10 to 2000 BIPS"},
		{"chk-sl", `"symbol":"BTCUSDT","stop_loss":"49000"`, "binance lists no STOP_LOSS orders for BTCUSDT (orderTypes)"},
		{"chk-pair", `"symbol":"BTCUSDT","take_profit":"52000","stop_loss":"49000"`, "binance lists no STOP_LOSS orders for BTCUSDT"},
	} {
		_, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","action":"buy","quantity":"0.01",`+tc.signal+`,"trace_id":"`+tc.trace+`"}`))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge, tc.trace)
		require.Equal(t, codes.OrderRejected, ge.Code, tc.trace)
		require.Contains(t, ge.Detail, tc.detail)
		require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:`+tc.trace+`' AND status = 'rejected'`))
	}
	require.Empty(t, b.binance.Orders(), "no entry was sent")
}

// A Binance spot buy with a take-profit and a trailing stop (no stop-loss):
// one OCO list whose stop order trails — a LIMIT_MAKER at the take-profit
// and a STOP_LOSS with trailingDelta 150 BIPS and no stopPrice — so the
// take-profit's fill cancels the trailing stop and the other way round;
// two separate sells would each need the coins. The answer shows the
// take-profit and the trailing stop (its rate) with the list's IDs.
func TestBinanceSpotTakeProfitWithTrailingStopIsOneOCOWhoseStopTrails(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"take_profit":{"percent":5},"trailing_stop":{"percent":1.5},"trace_id":"oco-trail"}`))
	require.NoError(t, err)
	require.Len(t, b.binance.Orders(), 1, "the entry is the only plain order")
	lists := b.binance.OrderLists()
	require.Len(t, lists, 1)
	l := lists[0]
	require.Equal(t, "LIMIT_MAKER", l.Above.Type)
	require.Equal(t, "3150", l.Above.Price.String(), "5 % above the fill")
	require.Equal(t, "STOP_LOSS", l.Below.Type)
	require.EqualValues(t, 150, l.Below.TrailingDelta)
	require.True(t, l.Below.StopPrice.IsZero())

	require.Len(t, out.Legs, 1)
	leg := out.Legs[0]
	require.Equal(t, exchange.RoleOCO, leg.Role)
	attached := leg.Attached()
	require.Len(t, attached, 2)
	require.Equal(t, exchange.RoleTakeProfit, attached[0].Role)
	require.Equal(t, "3150", attached[0].TriggerPrice.String())
	require.Equal(t, exchange.RoleTrailingStop, attached[1].Role)
	require.Equal(t, "1.5", attached[1].CallbackRate.Decimal.String())
	require.Equal(t, l.ListClientOrderID, attached[1].ClientOrderID)

	// A trailing stop beside a stop-loss would be two stops selling the
	// same coins: refused before anything is claimed.
	_, err = b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"stop_loss":"2900","trailing_stop":{"percent":1.5},"trace_id":"oco-trail-2"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.Unsupported, ge.Code)
	require.Len(t, b.binance.Orders(), 1)
}

// OKX spot (attachAlgoOrds) and Bybit spot (takeProfit/stopLoss on a
// limit order) would take an entry's take-profit and stop-loss on the
// order and, once it filled, place exit orders of their own — orders hoox
// neither records nor follows. When one sold, the strategy's spot ledger
// would still count the coins, and its next close would sell another
// strategy's. Such a signal is refused before anything is claimed or sent
// (422 unsupported), naming the markets where exits are safe.
func TestSpotVenueRefusesExitsItWouldPlaceOutsideTheLedger(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	for i, members := range []string{
		`"exchange":"okx","symbol":"ETHUSDT","take_profit":"3300"`,
		`"exchange":"okx","symbol":"ETHUSDT","order_type":"limit","price":"2990","stop_loss":"2800"`,
		`"exchange":"bybit-spot","symbol":"BTCUSDT","order_type":"limit","price":"59000","take_profit":"62000","stop_loss":"57000"`,
		`"exchange":"bybit-spot","symbol":"BTCUSDT","stop_loss":{"percent":2}`,
	} {
		_, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(`{%s,"action":"buy","quantity":"0.01","strategy":"a","trace_id":"spot-onorder-%d"}`, members, i)))
		var gerr *gateway.Error
		require.ErrorAs(t, err, &gerr, members)
		require.Equal(t, codes.Unsupported, gerr.Code, members)
		require.Contains(t, gerr.Detail, "spot ledger", members)
		require.Contains(t, gerr.Detail, "binance spot", members)
	}
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM trace_ids`), "nothing claimed")
	require.Empty(t, b.okx.Orders(), "nothing sent")
	require.Empty(t, b.bybit.Orders(), "nothing sent")
}
