package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
)

// The trader's cancel signal ends a partly filled Binance limit entry
// (USDⓈ-M and spot): no exit is placed for the part that filled, neither by
// the cancel nor later by the sweeper, since a cancel leaves no hoox order
// of its symbol resting (it cancels a filled entry's exits too). The
// exits are recorded not_placed with a leg_failed event naming the cancel,
// and the cancel-then-close a trader sends to get out sells what the spot
// entry bought: an OCO list created by the cancel would have locked it.
func TestCancelSignalOnAPartlyFilledEntryPlacesNoExits(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetSpotCommission(d("0.001"))
	fut, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"pc-fut"}`))
	require.NoError(t, err)
	spot, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","take_profit":"3100","stop_loss":"2800","trace_id":"pc-spot"}`))
	require.NoError(t, err)
	require.NoError(t, b.binance.PartialFill(fut.Order.ClientOrderID, d("0.5")))
	require.NoError(t, b.binance.PartialFill(spot.Order.ClientOrderID, d("0.4")))

	for _, c := range []struct {
		venue, trace, entry, filled string
		exits                       int // the algo pair on futures, one OCO list on spot
	}{
		{"binance-futures", "pc-cancel-fut", fut.Order.ClientOrderID, "0.5", 2},
		{"binance", "pc-cancel-spot", spot.Order.ClientOrderID, "0.4", 1},
	} {
		out, err := b.svc.Execute(ctx, input(t, `{"exchange":"`+c.venue+`","symbol":"ETHUSDT","action":"cancel","trace_id":"`+c.trace+`"}`))
		require.NoError(t, err)
		require.Equal(t, []string{c.entry}, cancelIDs(out.Cancelled))
		require.Equal(t, "cancelled", out.Cancelled[0].Status)
		require.Equal(t, c.filled, out.Cancelled[0].FilledQuantity.Decimal.String())
		require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = '`+c.entry+`' AND outcome IS DISTINCT FROM 'not_placed'`))
		require.Equal(t, c.exits, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'leg_failed' AND detail->>'cancelled_by' = 'k:`+c.trace+`'
			AND detail->>'parent_client_order_id' = '`+c.entry+`'`), "a leg_failed event per exit, naming the cancel")
	}
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE outcome = 'not_placed'`),
		"take-profit and stop-loss on futures, one OCO on spot: planned, not placed")

	// The sweeper, however late, finds nothing to place.
	open, err := db.ListOpenLegs(ctx, b.pool, -time.Hour, 100)
	require.NoError(t, err)
	require.Empty(t, open)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, b.venues, nil, nil)
	_, err = runner.Finish(ctx, "k:pc-fut", fut.Order.ClientOrderID)
	require.NoError(t, err)
	require.Empty(t, b.binance.AlgoOrders())
	require.Empty(t, b.binance.OrderLists())

	// Cancel then close: the close sells what the spot entry received
	// (0.4 less its 0.0004 ETH fee, down to the step); nothing is locked.
	closed, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"pc-close"}`))
	require.NoError(t, err)
	require.Equal(t, "filled", closed.Order.Status)
	require.Equal(t, "0.39", closed.Order.Quantity.String())
}

// A Binance USDⓈ-M limit entry whose answer was lost (503: nothing
// recorded), then filled 0.5 of 2 and cancelled at Binance before the
// sender's retry: the retry adopts the entry as Binance holds it —
// cancelled after a partial fill — and the same commit plans its exits
// (an INSERT this time), which the retry places at once and lists in its
// answer, sized to the 0.5.
func TestRetryAdoptingAnEntryEndedAfterAPartialFillPlacesItsExits(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	body := `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"pc-lost"}`
	b.binance.Inject(binancefake.Fault{Kind: binancefake.FaultUnknownAfterAccept})
	_, err := b.svc.Execute(ctx, input(t, body))
	var gerr *gateway.Error
	require.ErrorAs(t, err, &gerr)
	require.Equal(t, codes.Unavailable, gerr.Code, "no reconciler here: the claim rolls back, the intent stays")
	held := b.binance.Orders()
	require.Len(t, held, 1)
	require.NoError(t, b.binance.PartialFill(held[0].ClientOrderID, decimal.RequireFromString("0.5")))
	require.NoError(t, b.binance.CancelOrder(held[0].ClientOrderID))

	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, "cancelled", out.Order.Status)
	require.Equal(t, "0.5", out.Order.FilledQuantity.Decimal.String())
	require.Len(t, out.Legs, 2, "the exits of the 0.5, placed by the retry")
	algos := b.binance.AlgoOrders()
	require.Len(t, algos, 2)
	require.Equal(t, "3049.8", algos[0].TriggerPrice.String(), "2 % above the average fill at 2990")
	require.Equal(t, "0.5", algos[0].Quantity.String())
	require.Equal(t, "0.5", algos[1].Quantity.String())
	require.Len(t, b.binance.Orders(), 1, "the entry adopted, not placed again")
}
