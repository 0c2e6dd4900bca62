package gateway_test

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
)

// nullText is a nullable decimal as the answer renders it ("" when absent).
func nullText(d decimal.NullDecimal) string {
	if !d.Valid {
		return ""
	}
	return d.Decimal.String()
}

func strText(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// The 200 answer to a cancel lists a partly filled entry with what the
// cancel recorded for it (the fee ReadFees read, its asset, the fill
// price), as the row holds it and as a repeat (409) of the same cancel
// lists it: the first answer and its repeat say the same.
func TestCancelFirstAnswerAndRepeatListTheSameOrder(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	d := decimal.RequireFromString
	b.binance.SetSpotCommission(d("0.001"))
	spot, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",
		"order_type":"limit","price":"2990","trace_id":"rc-spot"}`))
	require.NoError(t, err)
	require.NoError(t, b.binance.PartialFill(spot.Order.ClientOrderID, d("0.4")))

	body := `{"exchange":"binance","symbol":"ETHUSDT","action":"cancel","trace_id":"rc-cancel"}`
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Len(t, out.Cancelled, 1)
	first := out.Cancelled[0]

	row, err := db.GetOrder(ctx, b.pool, spot.Order.ClientOrderID)
	require.NoError(t, err)
	require.True(t, row.Fee.Valid, "the cancel recorded the fee of the 0.4 bought")

	_, err = b.svc.Execute(ctx, input(t, body))
	ge := requireCode(t, err, codes.Duplicate)
	require.Len(t, ge.Original.Cancelled, 1)
	repeat := ge.Original.Cancelled[0]

	type shown struct{ status, filled, avg, fill, fee, feeAsset string }
	view := func(o db.OrderRow) shown {
		return shown{o.Status, nullText(o.FilledQuantity), nullText(o.AvgPrice), nullText(o.FillPrice), nullText(o.Fee), strText(o.FeeAsset)}
	}
	require.Equal(t, view(row), view(first), "the 200 answer shows the order as the cancel recorded it")
	require.Equal(t, view(repeat), view(first), "the 409 repeat shows the same original outcome")
}

// A limit entry with a take-profit and stop-loss that filled in full at
// Binance before the trader's cancel reached it: the cancel finds it
// filled (-2011, then the lookup), records it filled, not listed — the
// 200 answer is "cancelled": [] — and, in the same commit, settles the
// exits its own update just planned not_placed (db.DropUnsentExitLegs
// takes every unsent exit of the symbol). The position of 2 ETH is then
// open with no stop-loss, and nothing in the answer says so. DECISIONS
// ("Races with the cancel, left as they are") records that such an
// entry's exits are planned and placed by the sweeper; they are not.
func TestCancelKeepsTheExitsOfAnEntryThatFilledBeforeIt(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	fut, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",
		"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"rc-filled"}`))
	require.NoError(t, err)
	require.Equal(t, "open", fut.Order.Status)
	// Binance fills it; no follow job has looked yet.
	require.NoError(t, b.binance.PartialFill(fut.Order.ClientOrderID, decimal.RequireFromString("2")))

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"binance-futures","symbol":"ETHUSDT","action":"cancel","trace_id":"rc-filled-cancel"}`))
	require.NoError(t, err)
	require.Empty(t, out.Cancelled, "the entry filled first: nothing was cancelled")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+fut.Order.ClientOrderID+`' AND status = 'filled'`))
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = '`+fut.Order.ClientOrderID+`'
		AND role = 'stop_loss' AND outcome = 'not_placed'`),
		"the stop-loss of a position the cancel found open is dropped without a word in the answer")
}
