package binance_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
)

// algoStatus is the fake's status of each algo order, by clientAlgoId.
func algoStatus(b *testBundle) map[string]string {
	out := map[string]string{}
	for _, a := range b.fake.AlgoOrders() {
		out[a.ClientAlgoID] = a.Status
	}
	return out
}

// longWithExits opens a long of qty BTCUSDT (set on the fake) and places
// hoox's take-profit and stop-loss for it; it returns their IDs.
func longWithExits(t *testing.T, b *testBundle, qty string) (tp, sl string) {
	t.Helper()
	ctx := context.Background()
	b.fake.SetPosition("BTCUSDT", d(qty))
	tp, sl = newID(), newID()
	for _, o := range []exchange.Order{
		futuresExit(tp, "sell", exchange.RoleTakeProfit, "51000"),
		futuresExit(sl, "sell", exchange.RoleStopLoss, "49000"),
	} {
		r, err := b.venue.Place(ctx, o)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	}
	return tp, sl
}

// A close of the whole long whose answer was lost (the connection
// dropped after Binance booked and filled it) is found filled by the
// lookup of whoever recovers it — the sender's retry, the sweeper, the
// reconcile. That lookup is where hoox learns the long is gone: the
// long's take-profit and stop-loss are cancelled there, and listed in the
// report as a close's own answer lists them. A later lookup of the same
// close (the next long is open by then, with its own stop-loss) cancels
// nothing of the new long.
func TestWholeCloseAdoptedAfterALostAnswerCancelsTheClosedLongsExits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	tp, sl := longWithExits(t, b, "0.01")

	closing := closeOrder("close")
	b.fake.Inject(binancefake.Fault{Kind: binancefake.FaultDropAfterAccept})
	_, err := b.venue.Place(ctx, closing)
	b.requireUnknownOnce(t, err, closing)
	require.True(t, b.fake.Position("BTCUSDT").IsZero(), "Binance filled the close")
	require.Equal(t, map[string]string{tp: "NEW", sl: "NEW"}, algoStatus(b))

	r := b.requireAdopted(t, ctx, closing, true)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equalf(t, map[string]string{tp: "CANCELED", sl: "CANCELED"}, algoStatus(b),
		"the closed long's exits still rest at Binance after the close was adopted filled")
	require.ElementsMatch(t, []string{tp, sl}, cancelledIDs(r))

	slNew := newID()
	openLongWithStopLoss(t, b, slNew)
	r, err = b.venue.Lookup(ctx, closing)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, "NEW", algoStatus(b)[slNew], "a later lookup of the old close must not cancel the next long's stop-loss")
}

// On USDⓈ-M every close is a market order, but Binance may answer it NEW
// and the matching engine finish it later: Place's confirm gives up
// (unknown), the reconcile records it open, and the follow job's lookup
// is where hoox learns it filled. While it has not, the long's exits
// protect the long; once it filled they are cancelled there.
func TestWholeCloseFilledAfterItsAnswerCancelsTheClosedLongsExitsWhenLookedUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures, func(c *binance.Config) { c.ConfirmWait = 200 * time.Millisecond })
	tp, sl := longWithExits(t, b, "0.01")

	closing := closeOrder("close")
	b.fake.HoldMarketOrders(1, 0)
	_, err := b.venue.Place(ctx, closing)
	b.requireUnknownOnce(t, err, closing)
	r, err := b.venue.Lookup(ctx, closing)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, map[string]string{tp: "NEW", sl: "NEW"}, algoStatus(b), "while the close has not filled, the exits protect the long")

	require.NoError(t, b.fake.FillOrder(closing.ClientOrderID))
	require.True(t, b.fake.Position("BTCUSDT").IsZero())
	r, err = b.venue.Lookup(ctx, closing)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equalf(t, map[string]string{tp: "CANCELED", sl: "CANCELED"}, algoStatus(b),
		"the closed long's exits still rest at Binance after its close filled")
	require.ElementsMatch(t, []string{tp, sl}, cancelledIDs(r))
}

// A market close of the whole long of 0.02 meets liquidity for 0.01 only:
// Binance expires the rest, and 0.01 of the long is still open. Its
// take-profit and stop-loss still protect that 0.01 — the trader asked to
// be out, and is not — so they are kept; the next close, which flattens
// the long, cancels them.
func TestWholeCloseThatFilledOnlyPartlyKeepsTheExitsOfWhatIsLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	tp, sl := longWithExits(t, b, "0.02")

	b.fake.SetMarketLiquidity("BTCUSDT", d("0.01"))
	r, err := b.venue.Place(ctx, closeOrder("close"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "0.01", r.FilledQuantity.String())
	require.Equal(t, "0.01", b.fake.Position("BTCUSDT").String())
	require.Empty(t, r.CancelledFirst)
	require.Equalf(t, map[string]string{tp: "NEW", sl: "NEW"}, algoStatus(b),
		"a close that left 0.01 of the long open cancelled that 0.01's take-profit and stop-loss")

	b.fake.SetMarketLiquidity("BTCUSDT", d("-1"))
	r, err = b.venue.Place(ctx, closeOrder("close"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, b.fake.Position("BTCUSDT").IsZero())
	require.Equal(t, map[string]string{tp: "CANCELED", sl: "CANCELED"}, algoStatus(b))
}

// A close of the whole long larger than the maximum market quantity is
// sent in parts (the first carries the split plan, the others are partial
// closes placed after it). The part that leaves the long flat is where
// the long is gone: its exits are cancelled then, not before.
func TestSplitCloseCancelsTheClosedLongsExitsWhenItsLastPartFlattens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	tp, sl := longWithExits(t, b, "0.02")

	first := closeOrder("close")
	first.Side, first.Partial, first.Quantity = "sell", true, d("0.01")
	first.Split = &exchange.Split{Position: "0.02", MaxMarketQty: "0.01", Parts: []string{"0.01", "0.01"}}
	r, err := b.venue.Place(ctx, first)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, map[string]string{tp: "NEW", sl: "NEW"}, algoStatus(b), "half the long is still open")

	second := closeOrder("close")
	second.Side, second.Partial, second.Quantity = "sell", true, d("0.01")
	r, err = b.venue.Place(ctx, second)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, b.fake.Position("BTCUSDT").IsZero())
	require.Equalf(t, map[string]string{tp: "CANCELED", sl: "CANCELED"}, algoStatus(b),
		"the split close flattened the long and left its exits resting")
	require.ElementsMatch(t, []string{tp, sl}, cancelledIDs(r))
}

// A close of part of the long (percent_of_position) that leaves another
// entry's long open beside it cancels nothing, even when a flat moment
// never came: only a flat position proves a partial close's exits idle.
func TestPartialCloseThatLeavesALongCancelsNoExit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, binance.MarketFutures)
	tp, sl := longWithExits(t, b, "0.02")
	b.clock.Advance(time.Second)

	half := closeOrder("close")
	half.Partial, half.Quantity = true, d("0.01")
	half.Sizing = &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "50"}
	r, err := b.venue.Place(ctx, half)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	r, err = b.venue.Lookup(ctx, half)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, map[string]string{tp: "NEW", sl: "NEW"}, algoStatus(b))
}

func cancelledIDs(r exchange.Report) []string {
	var ids []string
	for _, c := range r.CancelledFirst {
		ids = append(ids, c.ClientOrderID)
	}
	return ids
}
