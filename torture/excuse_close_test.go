package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/signal"
)

// Path: judgeExits → droppedByACancel's byRunner excuse (c2742f3). A long
// of 10 filled with its take-profit and stop-loss; the stop-loss was
// settled not_placed by the leg runner for "the signal … (a cancel, or a
// close that left the position gone)". A close of the symbol was sent
// after the entry, but it never executed at the venue (no close order
// there at all: refused, or never reached it) — the long of 10 is still
// open, its stop-loss lost. The excuse asks only that a close signal was
// under way after the entry's booking, not that any close left the
// position gone, so the lost stop-loss passes (a hoox marking the wrong
// legs on a close — the entry-beside-a-close class fixed this round — is
// excused the same way).
func TestCheckerFailsAnExitDroppedForACloseThatNeverClosedThePosition(t *testing.T) {
	t.Parallel()
	reason := "the signal k:c (a cancel, or a close that left the position gone) came after this exit may have been sent; " +
		"it is not at the venue and its accept window has closed: it was never placed, and is not sent again"
	b := triggeredLong(t, closeSignal())
	b.vos = b.vos[:len(b.vos)-1]
	delete(b.hos, signal.LegClientOrderID("hxa", 2))
	b.leg("hxa", 2, hooxLeg{Outcome: "not_placed", Attempts: 1, Reason: reason})
	// The close was sent after the entry was booked; no order of it is at
	// the venue: nothing closed the long.
	b.s.sigState[1].spans = []span{{Replica: 0, Start: 1500 * time.Millisecond, End: 2 * time.Second}}
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge(), "the long of 10 is open without its stop-loss")
}

// Path: judgeExits → unknownAfterAClose (seed 240603). A long of 10
// filled; its stop-loss was armed and never reached the venue (the replica
// died before its request left), and a close signal marked it while its
// send was unknown, so the leg runner failed it as unknown. It passes only
// once the close's trace is named and the venue's fills left the long
// gone: a close that never closed the position, or another signal's
// trace, leaves the long without its stop-loss.
func TestCheckerPassesAnUnknownExitOnlyOnceItsCloseClosedThePosition(t *testing.T) {
	t.Parallel()
	b := triggeredLong(t, closeSignal())
	trace := b.s.closeTrace(&b.s.plan.signals[1])
	id := signal.LegClientOrderID("hxa", 2)
	b.vos = b.vos[:len(b.vos)-1]
	delete(b.hos, id)
	unknown := func(by string) hooxLeg {
		return hooxLeg{Outcome: "failed", Attempts: 1, Reason: "the signal " + by +
			" (a cancel, or a close that left the position gone) came after exit " + id + " may have been sent: not sent again; whether it exists is unknown, check the venue"}
	}
	b.leg("hxa", 2, unknown(trace))
	b.s.sigState[1].spans = []span{{Replica: 0, Start: 1500 * time.Millisecond, End: 2 * time.Second}}
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge(), "the close never closed the long: open without its stop-loss")

	b.send(1, 10*time.Second, closed("hxc", "sell", "10"))
	b.closeOrder("hxc", "9", "sell", "10", trace)
	require.Empty(t, b.judge(), "the close closed the long the stop-loss was to protect")

	b.leg("hxa", 2, unknown("k:someone-else"))
	require.Equal(t, map[string]int{checkExitPlaced: 1}, b.judge(), "no close of the run carries that trace")
}
