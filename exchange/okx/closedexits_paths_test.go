package okx_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/okx"
	"github.com/hoox/hoox/exchange/okx/okxfake"
)

// swapLongWithExits opens a 0.03 BTC long (3 contracts) with an attached
// take-profit and stop-loss (OKX generates them as one oco algo order on
// the fill) and hoox's trailing stop, and returns their algoClOrdIds.
func swapLongWithExits(t *testing.T, v *okx.Venue) (tpsl, trail string) {
	t.Helper()
	entry := order("hxokxpathlong1", "BTCUSDT", "buy", "0.03")
	entry.TakeProfit, entry.StopLoss = at("70000"), at("50000")
	r, err := v.Place(ctx(t), entry)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	r, err = v.Place(ctx(t), trailingExit("hxokxpathtrail1", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	return okx.AttachedAlgoID(entry.ClientOrderID), "hxokxpathtrail1"
}

// A close of the whole long whose answer was lost (a 502 after OKX took
// it) and that hoox then finds filled by its lookup — the retry's
// adoption, the reconcile, the sweeper — left the long's exits live: a
// SELL trailing stop and a TP/SL that would sell the next long. The
// lookup cancels them as Place's answer would have, and says so.
func TestSwapCloseAdoptedAfterALostAnswerCancelsTheClosedLongsExits(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	tpsl, trail := swapLongWithExits(t, v)

	c := exchange.Order{ClientOrderID: "hxokxlostclose1", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")}
	fake.Inject(okxfake.Fault{Kind: okxfake.FaultServerErrorAfterAccept})
	_, err := v.Place(ctx(t), c)
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
	require.True(t, fake.Position(swapInst).IsZero(), "OKX took the close")
	require.Equal(t, map[string]string{tpsl: "live", trail: "live"}, algoStates(fake), "the lost answer cancelled nothing")

	r, err := v.Lookup(ctx(t), c)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equalf(t, map[string]string{tpsl: "canceled", trail: "canceled"}, algoStates(fake),
		"the adopted close left the closed long's exits live, to sell the next long")
	require.ElementsMatch(t, []string{tpsl, trail}, okxCancelledIDs(r))
	require.True(t, r.ClosedPosition, "the position the close closed is gone")

	// The next long is not touched by a later look at the same close.
	entry := order("hxokxpathlong2", "BTCUSDT", "buy", "0.03")
	r, err = v.Place(ctx(t), entry)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	r, err = v.Place(ctx(t), trailingExit("hxokxpathtrail2", "0.03", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)
	r, err = v.Lookup(ctx(t), c)
	require.NoError(t, err)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, "live", algoStates(fake)["hxokxpathtrail2"], "a later lookup of the close cancelled the next long's stop")
}

// A close found by lookup with a long open beside it (an entry that filled
// after the close's position read, its stop placed in between) cancels
// nothing: the lookup does not know when the close read the position, and
// the open long's trailing stop must stay (as on Binance, fix-bnexits2).
func TestSwapCloseAdoptedWithALongBesideItKeepsThatLongsStop(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	swapLongWithExits(t, v)
	c := exchange.Order{ClientOrderID: "hxokxlostclose2", Symbol: "BTCUSDT", Action: "close", OrderType: "market", Quantity: d("0.03")}
	fake.Inject(okxfake.Fault{Kind: okxfake.FaultServerErrorAfterAccept})
	_, err := v.Place(ctx(t), c)
	require.ErrorIs(t, err, exchange.ErrUnknownOutcome)
	fake.Advance(time.Second)
	fake.SetPosition(swapInst, d("2"))
	r, err := v.Place(ctx(t), trailingExit("hxokxbesidestop", "0.02", "1.5"))
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, r.Status, r.Reason)

	r, err = v.Lookup(ctx(t), c)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Equal(t, "live", algoStates(fake)["hxokxbesidestop"], "the adopted close cancelled the stop of the long open beside it")
	require.Empty(t, r.CancelledFirst)
}

// A close split in two parts (over the maximum market size) cancels the
// long's exits with the part that leaves it flat; the first part, after
// which half the long is open, cancels none.
func TestSwapSplitCloseCancelsTheClosedLongsExitsWhenItsLastPartFlattens(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	tpsl, trail := swapLongWithExits(t, v)

	first := exchange.Order{ClientOrderID: "hxokxsplit1", Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("0.02"), Partial: true,
		Split: &exchange.Split{Position: "0.03", MaxMarketQty: "0.02", Parts: []string{"0.02", "0.01"}}}
	r, err := v.Place(ctx(t), first)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.Empty(t, r.CancelledFirst)
	require.Equal(t, map[string]string{tpsl: "live", trail: "live"}, algoStates(fake), "a third of the long is still open")

	second := exchange.Order{ClientOrderID: "hxokxsplit2", Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("0.01"), Partial: true}
	r, err = v.Place(ctx(t), second)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	require.Equalf(t, map[string]string{tpsl: "canceled", trail: "canceled"}, algoStates(fake),
		"the split close flattened the long and left its exits live")
	require.ElementsMatch(t, []string{tpsl, trail}, okxCancelledIDs(r))
	require.True(t, r.ClosedPosition)
}

// A percent_of_position close of half the long, sized before the long
// was partly closed by hand, sells all that is left (never more than the
// position): the long is gone, and its exits go with it.
func TestSwapPercentCloseThatHappensToFlattenCancelsTheExits(t *testing.T) {
	t.Parallel()
	v, fake := setup(t, okx.MarketSwap)
	tpsl, trail := swapLongWithExits(t, v)
	fake.SetPosition(swapInst, d("1"))

	half := exchange.Order{ClientOrderID: "hxokxhalf1", Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
		Quantity: d("0.015"), Partial: true, Sizing: &exchange.Sizing{Type: exchange.QuantityPercentOfPosition, Asked: "50%"}}
	r, err := v.Place(ctx(t), half)
	require.NoError(t, err)
	require.Equal(t, exchange.StatusFilled, r.Status, r.Reason)
	require.True(t, fake.Position(swapInst).IsZero())
	require.Equalf(t, "canceled", algoStates(fake)[trail], "the share that flattened the long left its trailing stop live")
	require.Equal(t, "canceled", algoStates(fake)[tpsl])
}

func okxCancelledIDs(r exchange.Report) []string {
	var ids []string
	for _, c := range r.CancelledFirst {
		ids = append(ids, c.ClientOrderID)
	}
	return ids
}
