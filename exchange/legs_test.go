package exchange_test

import (
	"fmt"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
)

func TestSplitClosePlansPartsOfAtMostTheMaximum(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	id := func(i int) string { return fmt.Sprintf("leg%d", i) }
	tests := []struct {
		name      string
		o         exchange.Order
		f         exchange.SizingFacts
		side      string
		parts     []string
		unchanged bool
	}{
		{name: "long over the maximum", o: exchange.Order{Action: "close", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("250.5"), MaxMarketQty: d("100"), Step: d("0.1")}, side: "sell", parts: []string{"100", "100", "50.5"}},
		{name: "short", o: exchange.Order{Action: "close_short", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("-200"), MaxMarketQty: d("100")}, side: "buy", parts: []string{"100", "100"}},
		{name: "last part below the minimum borrows from the one before", o: exchange.Order{Action: "close", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("200.01"), MaxMarketQty: d("100"), Step: d("0.01"), MinQty: d("1")}, side: "sell", parts: []string{"100", "99.01", "1"}},
		{name: "a partial exit is split from its own size", o: exchange.Order{Action: "close", Partial: true, Side: "sell", Quantity: d("150")},
			f: exchange.SizingFacts{Position: d("300"), MaxMarketQty: d("100")}, side: "sell", parts: []string{"100", "50"}},
		{name: "fits one order", o: exchange.Order{Action: "close", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("100"), MaxMarketQty: d("100")}, unchanged: true},
		{name: "no maximum", o: exchange.Order{Action: "close", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("1000")}, unchanged: true},
		{name: "close_long of a short: nothing to split", o: exchange.Order{Action: "close_long", Quantity: d("1")},
			f: exchange.SizingFacts{Position: d("-500"), MaxMarketQty: d("100")}, unchanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, split := exchange.SplitClose(tt.o, tt.f, id)
			if tt.unchanged {
				require.False(t, split)
				require.Equal(t, tt.o, got)
				return
			}
			require.True(t, split)
			parts := []string{got.Quantity.String()}
			require.True(t, got.Partial && got.ReduceOnly)
			require.Equal(t, tt.side, got.Side)
			for i, l := range got.Legs {
				require.Equal(t, exchange.RoleClosePart, l.Role)
				require.Equal(t, id(i+1), l.Order.ClientOrderID)
				require.Equal(t, tt.side, l.Order.Side)
				require.True(t, l.Order.Partial && l.Order.ReduceOnly)
				require.Nil(t, l.Order.Legs)
				parts = append(parts, l.Order.Quantity.String())
			}
			require.Equal(t, tt.parts, parts)
			require.Equal(t, tt.parts, got.Split.Parts)
		})
	}
}

// PlanTrailingLeg moves the trailing stop alone into a leg — a reduce-only
// close on the other side, Exit trailing_stop, its percent still to
// resolve — and leaves the take-profit and stop-loss on the entry.
func TestPlanTrailingLegMovesOnlyTheTrailingStop(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	tp := &exchange.Attached{Price: decimal.NewNullDecimal(d("70000"))}
	ts := &exchange.Attached{Percent: decimal.NewNullDecimal(d("1"))}
	o := exchange.Order{ClientOrderID: "hxentry", Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "market",
		Quantity: d("0.01"), TakeProfit: tp, TrailingStop: ts}
	got := exchange.PlanTrailingLeg(o, func(i int) string { return fmt.Sprintf("leg%d", i) })
	require.Same(t, tp, got.TakeProfit, "the take-profit stays on the entry")
	require.Nil(t, got.TrailingStop)
	require.Len(t, got.Legs, 1)
	leg := got.Legs[0]
	require.Equal(t, exchange.RoleTrailingStop, leg.Role)
	require.Equal(t, exchange.Order{ClientOrderID: "leg1", Symbol: "BTCUSDT", Action: "close", Side: "sell", ReduceOnly: true,
		OrderType: "market", Quantity: d("0.01"), TrailingStop: ts, Exit: exchange.RoleTrailingStop}, leg.Order)

	plain := exchange.Order{ClientOrderID: "hxplain", TakeProfit: tp}
	require.Equal(t, plain, exchange.PlanTrailingLeg(plain, nil), "nothing to move")
}

// An entry's exits cover what it opened or added on its own side: all of
// it from flat or on the same side, the excess over a position on the
// other side that it reversed, nothing when it only reduced or closed
// that position (OnlyReduced then says why).
func TestExitsCoverOnlyWhatTheEntryOpened(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	for _, tt := range []struct {
		side, before, filled, opened string
	}{
		{"buy", "0", "1", "1"},
		{"buy", "2", "1", "1"},
		{"buy", "-3", "1", "0"},
		{"buy", "-1", "1", "0"},
		{"buy", "-1", "3", "2"},
		{"sell", "1", "1", "0"},
		{"sell", "1", "3", "2"},
		{"sell", "-1", "1", "1"},
	} {
		opened := exchange.OpenedBy(tt.side, d(tt.before), d(tt.filled))
		require.True(t, d(tt.opened).Equal(opened), "%s %s on %s opened %s, not %s", tt.side, tt.filled, tt.before, tt.opened, opened)

		exitSide := "sell"
		if tt.side == "sell" {
			exitSide = "buy"
		}
		before := d(tt.before)
		exit := exchange.Order{Symbol: "BTCUSDT", Side: exitSide, Exit: exchange.RoleStopLoss, PositionBefore: &before}
		require.Equal(t, tt.opened == "0", exit.OnlyReduced(d(tt.filled)) != "", "%s %s on %s", tt.side, tt.filled, tt.before)
	}
	unknown := exchange.Order{Symbol: "BTCUSDT", Side: "buy", Exit: exchange.RoleStopLoss}
	require.Empty(t, unknown.OnlyReduced(decimal.NewFromInt(1)), "without the position before, the exits cover the fill")
}
