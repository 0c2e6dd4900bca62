package okx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
)

// Path: a percent_of_position close of 100 % is sized before its intent
// (gateway plan: the position read there, 0.03), then Place sends
// min(sized, position now) (resolveClose). An entry beside it (another
// strategy's long, 0.02) filled between that read and Place: OKX
// generated its attached TP/SL at the fill and hoox placed its trailing
// stop. The share sells the 0.03 it was sized for, filled in full, so
// closedExits takes it for "whole" (flattens: WholePosition) and, the
// position not flat, cancels the exits created before Place's stamp —
// the stamp is after the entry's fill, so the open long's TP/SL and
// trailing stop go: the 0.02 long left open runs with no exit. The
// report also says ClosedPosition, so the gateway's catch marks and
// cancels by ID that entry's exit legs too (planned before the share's
// intent, sent_at, which is after the sizing read).
func TestPercentClose100SizedBeforeAnEntryBesideKeepsThatEntrysExits(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	swapLongWithExits(t, v) // the long the share was sized on: 0.03
	// The share is sized now (100 % of 0.03); then the entry beside fills.
	fake.Advance(time.Second)
	beside := order("hxokxbesidelong", "BTCUSDT", "buy", "0.02")
	beside.TakeProfit, beside.StopLoss = at("71000"), at("49000")
	r, err := v.Place(ctx(t), beside)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	r, err = v.Place(ctx(t), trailingExit("hxokxbesidetrail", "0.02", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	fake.Advance(time.Second)

	share := exchange.Order{ClientOrderID: "hxokxall100", Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("0.03"), Partial: true, Sizing: &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "100%"}}
	r, err = v.Place(ctx(t), share)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.False(t, fake.Position(swapInst).IsZero(), "the entry beside the share is still open")
	states := algoStates(fake)
	require.Equalf(t, "live", states[okx.AttachedAlgoID(beside.ClientOrderID)],
		"the 100%% share cancelled the TP/SL of the long that filled beside it and is still open (states %v)", states)
	require.Equalf(t, "live", states["hxokxbesidetrail"],
		"the 100%% share cancelled the trailing stop of the long that is still open (states %v)", states)
}
