package torture

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/signal"
)

// The run moves HXUSDT's price (opPriceMove), so the exits it reaches
// execute at the Binance fake: a USDⓈ-M take-profit or stop-loss becomes a
// reduce-only market order, an OCO list sells through one of its orders,
// a lone spot exit executes. The checks below hold hoox to what that
// asks of it, and the cancel signals mixed into the stream to theirs.

// cancelRecordLag is how long before a cancel's send an exit must have
// been recorded for the cancel to be bound to see it: orders.created_at is
// its recording transaction's start, and a slow commit (at most 1.5 s a
// write) or a Postgres restart holds the commit back after it.
const cancelRecordLag = 5 * time.Second

// judgeExitFills checks that every exit the venue executed is recorded
// filled by hoox (checkExitFill): a triggered take-profit or stop-loss, an
// OCO list that sold, a lone spot exit. The follow job records it
// (DECISIONS.md, "exits followed to their end"); an exit hoox holds no row
// of is every_venue_order_recorded's.
func (s *sim) judgeExitFills(res *Result, exits []venueOrder, hos map[string]hooxOrder) {
	for _, x := range exits {
		if !executed(x).IsPositive() {
			continue
		}
		h, ok := hos[x.ClientOrderID]
		if !ok || !h.records(x) {
			continue
		}
		if h.Status != "filled" {
			res.Failures = append(res.Failures, Failure{Check: checkExitFill, Signal: s.exitSignal(x.ClientOrderID), ClientOrderID: x.ClientOrderID,
				Detail: fmt.Sprintf("the venue executed exit %s (%s of it), yet hoox records it %s %s after the faults stopped (bound %s): %s",
					x.ClientOrderID, executed(x), h.Status, s.waited.Round(time.Millisecond), s.cfg.RecoveryBound, x)})
			continue
		}
		res.Checks[checkExitFill]++
	}
}

// judgeCancels checks the cancel signals' 200s (checkCancelHolds): a
// cancel "leaves no hoox order of its symbol resting" (jobs.
// TestReopenedExitIsNotPlacedAfterACancel; DECISIONS.md, "the cancel
// action"), so no resting order (an exit, a limit entry) hoox recorded
// open well before the cancel was sent (cancelRecordLag) executes after
// its 200, and no order the 200 lists as cancelled ever executes.
func (s *sim) judgeCancels(res *Result, resting []venueOrder, hos map[string]hooxOrder) {
	exits := resting
	byID := map[string]venueOrder{}
	for _, x := range exits {
		byID[x.Exchange+"|"+x.ClientOrderID] = x
	}
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		if !sp.isCancel() {
			continue
		}
		for _, a := range s.sigState[sp.ID].answers {
			if a.Status != 200 {
				continue
			}
			failed := false
			fail := func(cid, format string, args ...any) {
				failed = true
				res.Failures = append(res.Failures, Failure{Check: checkCancelHolds, Signal: sp.ID, ClientOrderID: cid,
					Detail: fmt.Sprintf("cancel sent at %.3fs, answered 200 at %.3fs: ", a.At.Seconds(), a.Done.Seconds()) + fmt.Sprintf(format, args...)})
			}
			for _, c := range a.Cancelled {
				if x, ok := byID[sp.Venue.name+"|"+c.ClientOrderID]; ok && executed(x).IsPositive() {
					fail(c.ClientOrderID, "it lists %s as cancelled, yet the venue executed it: %s", c.ClientOrderID, x)
				}
			}
			for _, x := range exits {
				h, ok := hos[x.ClientOrderID]
				at, fired := s.triggered[x.ClientOrderID]
				if x.Exchange != sp.Venue.name || x.Symbol != sp.Symbol || !ok || !h.records(x) || h.Created <= 0 ||
					h.Created+cancelRecordLag > a.At || !fired || at <= a.Done {
					continue
				}
				fail(x.ClientOrderID, "resting order %s, recorded by hoox at %.3fs, executed at %.3fs after it: %s",
					x.ClientOrderID, h.Created.Seconds(), at.Seconds(), x)
			}
			if !failed {
				res.Checks[checkCancelHolds]++
			}
		}
	}
}

// droppedByACancel reports whether leg l of entry e was settled unplaced
// by a cancel signal (db.DropUnsentExitLegs, MarkCancelledExitLegs: its
// reason names the cancel) or by the leg runner after a cancel or a close
// that left the position gone marked it (jobs' settleCancelled: "the
// signal … (a cancel, or a close …)"), where a cancel could have come
// after the entry: a send of a cancel on the entry's venue and symbol
// still unanswered, or answered, after the venue booked the entry. A
// close is no excuse here: whether it left the position gone is not
// judged, and a close's wrong marking must fail.
func (s *sim) droppedByACancel(e venueOrder, l hooxLeg) bool {
	byCancel := strings.HasPrefix(l.Reason, "the cancel signal ")
	byRunner := strings.HasPrefix(l.Reason, "the signal ") && strings.Contains(l.Reason, "(a cancel, or a close that left the position gone)")
	if l.Outcome != "not_placed" || !byCancel && !byRunner {
		return false
	}
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		if !sp.isCancel() || sp.Venue.name != e.Exchange || sp.Symbol != e.Symbol {
			continue
		}
		if slices.ContainsFunc(s.sigState[sp.ID].spans, func(sn span) bool { return sn.End == 0 || sn.End >= e.Booked }) {
			return true
		}
	}
	return false
}

// unknownAfterAClose reports whether leg l of entry e (cover: what e
// opened and what was held on its side after) was failed with its order
// unknown by the leg runner because a close signal marked it while it may
// have been sent (jobs: "the signal S (a cancel, or a close that left the
// position gone) came after exit X may have been sent: not sent again;
// whether it exists is unknown"), S is a close of e's venue and symbol
// (its trace, closeTrace), and the venue's fills did leave e's position
// gone after e's fill (cover.closed()). The caller checks that the venue
// holds no order under the leg's ID. Seed 240603: a take-profit armed by a
// replica killed before its request left; Binance USDⓈ-M may book an algo
// order late, so hoox cannot prove it absent and does not send it again;
// the trader's close then closed the position it was to protect. Without
// such a close, the same exit still fails the check.
func (s *sim) unknownAfterAClose(e venueOrder, cover *exitCover, l hooxLeg) bool {
	const prefix, marker = "the signal ", " (a cancel, or a close that left the position gone) came after exit "
	if l.Outcome != "failed" || cover == nil || !cover.closed() || !strings.HasPrefix(l.Reason, prefix) {
		return false
	}
	trace, _, ok := strings.Cut(strings.TrimPrefix(l.Reason, prefix), marker)
	if !ok {
		return false
	}
	return slices.ContainsFunc(s.plan.signals, func(sp signalPlan) bool {
		return sp.isClose() && sp.Venue.name == e.Exchange && sp.Symbol == e.Symbol && s.closeTrace(&sp) == trace
	})
}

// droppedAfterASibling reports whether leg l of entry e was settled
// unplaced because another exit of e executed first (jobs' leg runner:
// "exit X filled first: the position it protected is closed"), and the
// venue did execute that sibling X (a price move triggered it) no later
// than hoox settled l (l.Settled): the position the exit was to protect
// was gone, so it must not be placed. A leg dropped before its sibling
// executed left a position open without that exit.
func (s *sim) droppedAfterASibling(e venueOrder, l hooxLeg) bool {
	const prefix, suffix = "exit ", " filled first: the position it protected is closed"
	if l.Outcome != "not_placed" || !strings.HasPrefix(l.Reason, prefix) || !strings.HasSuffix(l.Reason, suffix) {
		return false
	}
	sibling := strings.TrimSuffix(strings.TrimPrefix(l.Reason, prefix), suffix)
	sig, ok := s.byQuantity[e.Exchange+"|"+e.Quantity]
	if !ok {
		return false
	}
	for n := range s.plan.signals[sig].exitLegs() {
		if signal.LegClientOrderID(e.ClientOrderID, n+1) == sibling {
			at, fired := s.triggered[sibling]
			return fired && l.Settled > 0 && at <= l.Settled
		}
	}
	return false
}

// exitPercent is how far from the entry's price each exit the simulator
// asks for lies (signalPlan.body).
var exitPercent = map[string]float64{"take_profit": 2, "stop_loss": 1, "trailing_stop": 1.5}

// reachedRefusals are the refusals Binance gives an exit whose price the
// market has already reached, as the fake enforces them: USDⓈ-M -2021
// "Order would immediately trigger." (trade/rest-api/New-Algo-Order.md;
// binancefake/algo.go), spot -2010 "Order would trigger immediately." for
// a STOP_LOSS or TAKE_PROFIT on the trigger's side, "Order would
// immediately match and take." for a LIMIT_MAKER (rest-api.md, "New
// order"; binancefake/spotexit.go) and, for an OCO list, "The
// relationship of the prices for the orders is not correct." (rest-api.md,
// "New Order list - OCO", price restrictions; binancefake/oco.go).
var reachedRefusals = []string{"would immediately trigger", "would trigger immediately", "would immediately match and take",
	"relationship of the prices for the orders is not correct"}

// refusedAsReached reports whether leg l, exit role of entry e, was
// refused because the price had already reached it (reachedRefusals) and
// the run's price did reach its trigger (e's price moved by the exit's
// percent, to within a tick; either of an OCO list's) at some moment
// from the venue's booking of e on: then the refusal is the venue's rule,
// not a lost exit.
func (s *sim) refusedAsReached(e venueOrder, role string, l hooxLeg) bool {
	return l.Outcome == "rejected" && s.reachedRefusal(e, role, l.Reason)
}

// refusedUnheard reports whether leg l (client order ID id), exit role of
// entry e, failed with its order unknown (outcome failed: hoox never
// heard the venue's answer, and a lookup never found it) while the venue
// refused every placement of it that reached a front, each as already
// reached, with the run's price reaching it (seed 16: an OCO list refused
// as "The relationship of the prices…", its answer lost on the way back).
func (s *sim) refusedUnheard(e venueOrder, role, id string, l hooxLeg) bool {
	refusals, ok := s.exitRefusals[id]
	if l.Outcome != "failed" || !ok || len(refusals) == 0 || s.exitAccepted[id] {
		return false
	}
	for _, r := range refusals {
		if !s.reachedRefusal(e, role, r) {
			return false
		}
	}
	return true
}

// reachedRefusal reports whether reason is one of reachedRefusals and the
// run's price reached exit role of entry e after its booking.
func (s *sim) reachedRefusal(e venueOrder, role, reason string) bool {
	if !e.Price.IsPositive() || !slices.ContainsFunc(reachedRefusals, func(r string) bool { return strings.Contains(reason, r) }) {
		return false
	}
	roles := []string{role}
	if role == "oco" {
		roles = []string{"take_profit", "stop_loss"}
	}
	tick := decimal.RequireFromString("0.0001")
	prices := s.pricesSince(e.Booked)
	for _, r := range roles {
		pct, ok := exitPercent[r]
		if !ok || r == "trailing_stop" {
			continue
		}
		// A long's take-profit sells above, its stop-loss below; a
		// short's the other way round.
		up := (r == "take_profit") == (e.Side == "buy")
		move := decimal.NewFromFloat(pct / 100)
		trigger := e.Price.Mul(decimal.NewFromInt(1).Add(move))
		if !up {
			trigger = e.Price.Mul(decimal.NewFromInt(1).Sub(move))
		}
		for _, p := range prices {
			if (up && p.GreaterThanOrEqual(trigger.Sub(tick))) || (!up && p.LessThanOrEqual(trigger.Add(tick))) {
				return true
			}
		}
	}
	return false
}

// pricesSince are the prices HXUSDT had at any moment from at on: the one
// in force at at (1 before the first move) and every later one.
func (s *sim) pricesSince(at time.Duration) []decimal.Decimal {
	out := []decimal.Decimal{decimal.NewFromInt(1)}
	for _, p := range s.prices {
		if p.At <= at {
			out = out[:0]
		}
		out = append(out, p.Price)
	}
	return out
}

// closeSignalOf is the close signal a close order (Close) belongs to, by
// the trace hoox recorded it under; -1 when hoox holds no record of it or
// its trace is no close signal's.
func (s *sim) closeSignalOf(o venueOrder, hos map[string]hooxOrder) int {
	h, ok := hos[o.ClientOrderID]
	if !ok || !h.records(o) {
		return -1
	}
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		if sp.isClose() && sp.Venue.name == o.Exchange && s.closeTrace(sp) == h.TraceID {
			return sp.ID
		}
	}
	return -1
}

// judgeCloseAnswer checks a close's 200 or 409 duplicate: the order it
// names is on the signal's venue and symbol, and the venue holds it as a
// close (reduce-only).
func (s *sim) judgeCloseAnswer(res *Result, sp *signalPlan, a answer, byClientID map[string]venueOrder) {
	fail := func(format string, args ...any) {
		res.Failures = append(res.Failures, Failure{Check: checkAnswer, Signal: sp.ID, Detail: fmt.Sprintf(format, args...)})
	}
	cid := ""
	switch {
	case a.Order != nil && a.Order.Status != "rejected":
		if a.Order.Exchange != sp.Venue.name || a.Order.Symbol != sp.Symbol {
			fail("%d at %.3fs says it placed %s %s, not on the close's %s %s", a.Status, a.At.Seconds(), a.Order.Exchange, a.Order.Symbol, sp.Venue.name, sp.Symbol)
			return
		}
		cid = a.Order.ClientOrderID
	case a.Original != nil && a.Original.ClientOrderID != nil && a.Original.Status == "dispatched":
		cid = *a.Original.ClientOrderID
	default:
		return
	}
	switch o, ok := byClientID[sp.Venue.name+"|"+cid]; {
	case !ok:
		fail("%d at %.3fs names close %s, which %s does not hold", a.Status, a.At.Seconds(), cid, sp.Venue.name)
	case !o.Close || o.Symbol != sp.Symbol:
		fail("%d at %.3fs names %s, which is %s, not a reduce-only close of %s", a.Status, a.At.Seconds(), cid, o, sp.Symbol)
	default:
		res.Checks[checkAnswer]++
	}
}

// judgeCloses checks the closes' 200s (checkCloseHolds): a USDⓈ-M close
// of the whole position that filled cancels the exits of the position it
// closed (DECISIONS.md, "A whole futures close cancels only the exits of
// the position it closed": every hoox exit on the close's side created by
// the time the close began), so no exit on its side that hoox recorded
// open well before the close was first sent (cancelRecordLag) executes
// after the 200. Only a 200 whose own order filled is judged: a close
// adopted by a lookup or a reconcile cancels nothing (DECISIONS.md,
// fix-bnclose, "Left").
func (s *sim) judgeCloses(res *Result, bySig map[int][]venueOrder, exits []venueOrder, hos map[string]hooxOrder) {
	for i := range s.plan.signals {
		sp := &s.plan.signals[i]
		st := s.sigState[sp.ID]
		if !sp.isClose() || st == nil || len(st.sends) == 0 {
			continue
		}
		first := slices.Min(st.sends)
		for _, a := range st.answers {
			if a.Status != 200 || a.Order == nil || a.Order.Status != "filled" {
				continue
			}
			i := slices.IndexFunc(bySig[sp.ID], func(o venueOrder) bool { return o.ClientOrderID == a.Order.ClientOrderID })
			if i < 0 {
				continue // named no order the venue holds: judgeCloseAnswer's
			}
			c := bySig[sp.ID][i]
			failed := false
			for _, x := range exits {
				h, ok := hos[x.ClientOrderID]
				at, fired := s.triggered[x.ClientOrderID]
				if x.Exchange != sp.Venue.name || x.Symbol != sp.Symbol || x.Side != c.Side || !ok || !h.records(x) || h.Created <= 0 ||
					h.Created+cancelRecordLag > first || !fired || at <= a.Done {
					continue
				}
				failed = true
				res.Failures = append(res.Failures, Failure{Check: checkCloseHolds, Signal: sp.ID, ClientOrderID: x.ClientOrderID, Detail: fmt.Sprintf(
					"close %s (%s, first sent at %.3fs) answered 200 filled at %.3fs, yet exit %s of its side, recorded by hoox at %.3fs, executed at %.3fs: %s",
					c.ClientOrderID, c, first.Seconds(), a.Done.Seconds(), x.ClientOrderID, h.Created.Seconds(), at.Seconds(), x)})
			}
			if !failed {
				res.Checks[checkCloseHolds]++
			}
		}
	}
}

// traceFreed reports whether signal sig's trace (trace, the order's) may
// have been removed after an order of it was booked at booked: a release
// of it answered 200 after, a purge requested at least one TTL after, or
// hoox's record of purging trace after (a purge requested earlier runs as
// a job, and may reach the trace once it has expired). An entry is
// followed only as long as its trace exists (README, "Orders followed to
// their end"): then hoox looks once more and stops following it, with an
// event and a notification, and a later fill stays unrecorded.
func (s *sim) traceFreed(sig int, trace string, booked time.Duration) bool {
	after := func(at time.Duration) bool { return at >= booked }
	if slices.ContainsFunc(s.purged[trace], after) {
		return true
	}
	if sig < 0 {
		return false
	}
	if slices.ContainsFunc(s.releases[sig], after) {
		return true
	}
	return slices.ContainsFunc(s.purges, func(at time.Duration) bool { return at >= booked+s.cfg.window()-time.Second })
}
