package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/signal"
)

// The made-up histories below play docs/DECISIONS.md's "exits cover only
// what the entry opened" on Binance USDⓈ-M, where every signal moves one
// position: sell 30 opens a short of 30, then the buy with exits reduces
// or reverses it.

func futuresSignal(side, qty string, exits ...string) signalPlan {
	return signalPlan{Venue: venue{"binance-futures", "binance"}, Symbol: symbol, Side: side, Quantity: qty, Mode: ModeKey, Exits: exits}
}

// fill books signal sig's order at the venue, filled when booked at booked
// (0: unknown), and recorded filled by hoox.
func (b *checkBundle) fill(sig int, cid, eid string, booked time.Duration) {
	b.order(sig, cid, eid, true)
	b.vos[len(b.vos)-1].Booked = booked
}

// exitAt books leg n of entry at the venue as its exit (the signal's n-th
// role) for qty on side, recorded open by hoox, its leg dispatched.
func (b *checkBundle) exitAt(sig int, entry string, n int, eid, side, qty string) {
	o := venueOrder{Exchange: "binance-futures", ClientOrderID: signal.LegClientOrderID(entry, n), ExchangeOrderID: eid,
		Symbol: symbol, Side: side, Quantity: qty, Status: "NEW", Exit: b.s.plan.signals[sig].Exits[n-1]}
	b.vos = append(b.vos, o)
	b.hos[o.ClientOrderID] = hooxOrder{TraceID: "k:x", ClientOrderID: o.ClientOrderID, Exchange: o.Exchange, Symbol: o.Symbol,
		Side: o.Side, Quantity: o.Quantity, Status: "open", ExchangeOrderID: eid}
	b.leg(entry, n, hooxLeg{Outcome: "dispatched", Attempts: 1})
}

// leg records hoox's order_legs row of leg n of entry.
func (b *checkBundle) leg(entry string, n int, l hooxLeg) {
	if b.s.legs == nil {
		b.s.legs = map[string]hooxLeg{}
	}
	b.s.legs[signal.LegClientOrderID(entry, n)] = l
}

const onlyReduced = "the HXUSDT position was a short of 30 before the entry: its buy of 12 only reduced it and opened no long position for the take_profit to protect"

// A buy of 12 against a short of 30 only reduces it: its exits are
// recorded rejected with the reason, never sent, and none is at the venue.
func TestCheckerPassesAReducingEntryWithItsExitsRejected(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignal("sell", "30"), futuresSignal("buy", "12", "take_profit", "stop_loss"))
	b.fill(0, "hxs", "1001", 0)
	b.fill(1, "hxa", "1002", 0)
	b.s.positionBefore["hxa"] = "-30"
	b.leg("hxa", 1, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
	res := &Result{Checks: map[string]int{}}
	b.s.judge(res, b.vos, b.hos, nil)
	require.Empty(t, res.Failures)
	require.Equal(t, 2, res.Checks[checkExitPlaced])
	require.Equal(t, 1, res.Checks[checkPositionBefore])

	// A refusal without its reason, or one sent, is not the rule's.
	b.leg("hxa", 1, hooxLeg{Outcome: "rejected"})
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Attempts: 1, Reason: "ReduceOnly Order is rejected."})
	require.Equal(t, map[string]int{checkExitPlaced: 2}, b.judge())

	// An exit at the venue for an entry that opened nothing.
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
	b.exitAt(1, "hxa", 1, "1003", "sell", "12")
	require.Equal(t, map[string]int{checkExitAttributed: 1}, b.judge())
}

// A reducing entry's exits dropped by a cancel of the symbol under way
// after the entry (settled not_placed before their first send) pass as a
// refusal does (seed 191202, signal 957); without such a cancel, not.
func TestCheckerPassesAReducingEntrysExitsDroppedByACancel(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignal("sell", "30"), futuresSignal("buy", "12", "take_profit", "stop_loss"),
		signalPlan{Venue: venue{"binance-futures", "binance"}, Symbol: symbol, Side: actionCancel, Mode: ModeKey})
	b.fill(0, "hxs", "1001", 0)
	b.fill(1, "hxa", "1002", time.Second)
	b.s.positionBefore["hxa"] = "-30"
	dropped := hooxLeg{Outcome: "not_placed", Reason: "the cancel signal k:c came before this exit was placed: it stays unplaced"}
	b.leg("hxa", 1, dropped)
	b.leg("hxa", 2, dropped)
	b.s.sigState[2].spans = []span{{Replica: 0, Start: 200 * time.Millisecond, End: 800 * time.Millisecond}}
	require.Equal(t, map[string]int{checkExitPlaced: 2}, b.judge(), "the only cancel ended before the entry was booked")

	b.s.sigState[2].spans = append(b.s.sigState[2].spans, span{Replica: 1, Start: 1500 * time.Millisecond, End: 2 * time.Second})
	require.Empty(t, b.judge())
}

// A buy of 25 against a short of 10 reverses it: its exits cover the long
// of 15 it opened.
func TestCheckerPassesAReversalWithExitsForTheOpenedPart(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignal("sell", "10"), futuresSignal("buy", "25", "take_profit", "stop_loss"))
	b.fill(0, "hxs", "1001", 0)
	b.fill(1, "hxa", "1002", 0)
	b.s.positionBefore["hxa"] = "-10"
	b.exitAt(1, "hxa", 1, "1003", "sell", "15")
	b.exitAt(1, "hxa", 2, "1004", "sell", "15")
	res := &Result{Checks: map[string]int{}}
	b.s.judge(res, b.vos, b.hos, nil)
	require.Empty(t, res.Failures)
	require.Equal(t, 2, res.Checks[checkExitAttributed])
	require.Equal(t, 2, res.Checks[checkExitPlaced])
}

// The same reversal with exits for the whole 25: a long of 15 protected
// by sells of 25 would open a short of 10 when they trigger.
func TestCheckerCatchesAReversalsExitSizedToTheWholeEntry(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignal("sell", "10"), futuresSignal("buy", "25", "take_profit", "stop_loss"))
	b.fill(0, "hxs", "1001", 0)
	b.fill(1, "hxa", "1002", 0)
	b.s.positionBefore["hxa"] = "-10"
	b.exitAt(1, "hxa", 1, "1003", "sell", "25")
	b.exitAt(1, "hxa", 2, "1004", "sell", "15")
	require.Equal(t, map[string]int{checkExitAttributed: 1, checkExitPlaced: 1}, b.judge(),
		"the take-profit covers 25, the entry opened 15")
}

// hoox stored a flat position before the buy: the buy opened a long of
// 12, and its exits recorded rejected as if it only reduced leave it
// unprotected.
func TestCheckerCatchesExitsRejectedForAnEntryThatOpened(t *testing.T) {
	t.Parallel()
	b := setupCheck(t, futuresSignal("buy", "12", "take_profit", "stop_loss"))
	b.fill(0, "hxa", "1001", 0)
	b.s.positionBefore["hxa"] = "0"
	b.leg("hxa", 1, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
	require.Equal(t, map[string]int{checkExitPlaced: 2}, b.judge())
}

// The stored position must be one the venue held after some prefix of its
// fills, before the entry's own fill and no earlier than the fills booked
// before the signal was first sent.
func TestCheckerCatchesAPositionBeforeTheVenueNeverHeld(t *testing.T) {
	t.Parallel()
	setup := func(before string) *checkBundle {
		b := setupCheck(t, futuresSignal("sell", "30"), futuresSignal("buy", "12", "take_profit", "stop_loss"), futuresSignal("sell", "5"))
		b.send(1, 2*time.Second, answer{})
		b.fill(0, "hxs", "1001", time.Second)
		b.fill(1, "hxa", "1002", 2100*time.Millisecond)
		b.fill(2, "hxt", "1005", 3*time.Second)
		b.s.positionBefore["hxa"] = before
		b.leg("hxa", 1, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
		b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: onlyReduced})
		return b
	}
	require.Empty(t, setup("-30").judge())
	require.Equal(t, map[string]int{checkPositionBefore: 1}, setup("-12").judge(), "no prefix of the fills leaves a short of 12")
	require.Equal(t, map[string]int{checkPositionBefore: 1}, setup("-35").judge(), "a short of 35 only after the entry's own fill")
	require.Equal(t, map[string]int{checkPositionBefore: 1, checkExitPlaced: 2}, setup("").judge(),
		"the intent stores no position: the exits are held to the whole fill")

	// Flat was the venue's position before the short of 30, which was
	// booked before the signal's first send: the read cannot have seen it.
	b := setup("0")
	b.exitAt(1, "hxa", 1, "1003", "sell", "12")
	b.exitAt(1, "hxa", 2, "1004", "sell", "12")
	require.Equal(t, map[string]int{checkPositionBefore: 1}, b.judge())
	// Booked after the first send, the short may have come after the read.
	b.vos[0].Booked = 2050 * time.Millisecond
	require.Empty(t, b.judge())
}

// The made-up histories below play the exits hoox resolves against the
// position it reads before their first send: other signals on the symbol
// move it between the entry's fill and the exit's send.

const closedStopLoss = "the HXUSDT position this stop_loss was to protect is closed: not placed (a reduce-only exit on it would cut the next position)"

// movedAfterEntry books a buy of 12 with exits from flat (1 s), then
// signal 1's sell (2 s): a sell of 20 flips the long to a short of 8, a
// sell of 5 leaves a long of 7.
func movedAfterEntry(t *testing.T, sell string) *checkBundle {
	t.Helper()
	b := setupCheck(t, futuresSignal("buy", "12", "take_profit", "stop_loss"), futuresSignal("sell", sell))
	b.fill(0, "hxa", "1001", time.Second)
	b.fill(1, "hxt", "1002", 2*time.Second)
	b.s.positionBefore["hxa"] = "0"
	b.exitAt(0, "hxa", 1, "1003", "sell", "12")
	return b
}

// A stop-loss refused as its position closed passes when the replay closes
// the entry's long after its fill and before the refusal.
func TestCheckerPassesAnExitRefusedForAPositionClosedAfterTheEntry(t *testing.T) {
	t.Parallel()
	b := movedAfterEntry(t, "20")
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: closedStopLoss})
	require.Empty(t, b.judge())
}

// The same refusal with no close after the entry's fill in the replay, or
// sent before it was refused, fails.
func TestCheckerCatchesAnExitRefusedForAPositionNeverClosed(t *testing.T) {
	t.Parallel()
	b := movedAfterEntry(t, "5")
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: closedStopLoss})
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge(), "a long of 7 is still held")

	b = movedAfterEntry(t, "20")
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Attempts: 1, Reason: closedStopLoss})
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge(), "hoox reads the position before the first send only")

	// A close before the entry's own fill is not one after it: a buy of
	// 12 against a short of 5 closes it as it fills and opens a long of 7,
	// which stays.
	b = setupCheck(t, futuresSignal("sell", "5"), futuresSignal("buy", "12", "take_profit", "stop_loss"))
	b.fill(0, "hxt", "1001", time.Second)
	b.fill(1, "hxa", "1002", 2*time.Second)
	b.s.positionBefore["hxa"] = "-5"
	b.leg("hxa", 1, hooxLeg{Outcome: "rejected", Reason: closedStopLoss})
	b.leg("hxa", 2, hooxLeg{Outcome: "rejected", Reason: closedStopLoss})
	require.Equal(t, map[string]int{checkExitPlaced: 2}, b.judge())
}

// An exit capped to the long of 7 left after the sell of 5 passes.
func TestCheckerPassesAnExitCappedToALaterPosition(t *testing.T) {
	t.Parallel()
	b := movedAfterEntry(t, "5")
	b.exitAt(0, "hxa", 2, "1004", "sell", "7")
	require.Empty(t, b.judge())
}

// An exit below what the entry opened that matches no position held after
// the entry's fill fails, as does one above what it opened.
func TestCheckerCatchesAnExitCappedToNoPositionHeld(t *testing.T) {
	t.Parallel()
	for _, qty := range []string{"8", "5", "13"} {
		b := movedAfterEntry(t, "5")
		b.exitAt(0, "hxa", 2, "1004", "sell", qty)
		require.Equal(t, map[string]int{checkExitAttributed: 1, checkExitPlaced: 1}, b.judge(), "a stop-loss for %s", qty)
	}
}
