package torture

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// checkPositionBefore: the position an entry's intent stores as read
// before it (exchange.Order.PositionBefore) is one the venue really held
// between the signal's first send and the entry's own fill.
const checkPositionBefore = "position_before_is_the_venue's"

// coversOpened reports whether exits on exchange cover only what their
// entry opened (docs/DECISIONS.md, "exits cover only what the entry
// opened"): a derivatives venue whose exits are separate orders, placed
// once the entry filled. Of those the simulator generates exits on Binance
// USDⓈ-M only (not Bybit's or OKX's trailing leg).
func coversOpened(exchange string) bool { return exchange == "binance-futures" }

// openedBy is what an entry on side that executed filled opened or added
// on its own side, given the position before it (signed, short < 0): the
// fill less what it took off a position on the other side. The checker's
// own reading of the rule, not hoox's exchange.OpenedBy, so that a wrong
// rule in hoox shows.
func openedBy(side string, before, filled decimal.Decimal) decimal.Decimal {
	against := decimal.Max(decimal.Zero, before) // a long, which a sell reduces
	if side == "buy" {
		against = decimal.Max(decimal.Zero, before.Neg())
	}
	return decimal.Max(decimal.Zero, filled.Sub(against))
}

// executed is what venue order o executed: its Executed, else all of it
// when the venue says it filled, else nothing.
func executed(o venueOrder) decimal.Decimal {
	if d, err := decimal.NewFromString(o.Executed); err == nil {
		return d
	}
	if q, err := decimal.NewFromString(o.Quantity); err == nil && strings.EqualFold(o.Status, "filled") {
		return q
	}
	return decimal.Zero
}

// positionFills are the orders that moved a USDⓈ-M position, by symbol,
// in the order the venue booked them: the fake books and fills a market
// order in one step under one lock, and answers a position read under the
// same lock, so a read sees the position after some prefix of these.
// Entries, closes and triggered exits alike; the conditional exits
// themselves (Exit set) move nothing until they trigger.
func positionFills(vos []venueOrder) map[string][]venueOrder {
	out := map[string][]venueOrder{}
	for _, o := range vos {
		if o.Exchange == "binance-futures" && o.Exit == "" && executed(o).IsPositive() {
			out[o.Symbol] = append(out[o.Symbol], o)
		}
	}
	for _, fills := range out {
		slices.SortFunc(fills, func(a, b venueOrder) int { return cmp.Compare(fillNumber(a), fillNumber(b)) })
	}
	return out
}

// fillNumber orders fills as the venue made them: by the fake's number of
// an order's first execution when known (a resting limit order fills
// after orders booked later), else by its exchange order ID (a market
// order fills as it is booked).
func fillNumber(o venueOrder) int64 {
	if o.FillSeq > 0 {
		return o.FillSeq
	}
	return orderNumber(o)
}

// orderNumber is a venue order's exchange order ID as a number: the
// Binance fake numbers them in the order it accepts them.
func orderNumber(o venueOrder) int64 {
	n, _ := strconv.ParseInt(o.ExchangeOrderID, 10, 64)
	return n
}

// exitCover is what a filled entry's exits must cover under the rule:
// what it opened, from the position its intent stores.
type exitCover struct {
	Before string // as stored; "" when the intent stores none
	Filled decimal.Decimal
	Opened decimal.Decimal
	// After is the position on the entry's side after its own fill and
	// after each fill booked after it: what hoox's read before the
	// exit's first send may have seen (docs/TORTURE.md, "exits on a
	// position that moved").
	After []held
}

func (c exitCover) String() string {
	before := c.Before
	if before == "" {
		before = "not stored"
	}
	return fmt.Sprintf("position before %s, filled %s, opened %s", before, c.Filled, c.Opened)
}

// exitCover judges entry e's stored position before it against the
// venue's fills (checkPositionBefore) and returns what its exits must
// cover. An intent that stores no position (hoox reads one for every entry
// with such exits) fails the check; its exits are then held to the whole
// fill, as hoox sizes them without one.
func (s *sim) exitCover(res *Result, e venueOrder, sig int, fills []venueOrder) exitCover {
	c := exitCover{Before: s.positionBefore[e.ClientOrderID], Filled: executed(e), After: heldAfter(e, fills)}
	c.Opened = c.Filled
	fail := func(format string, args ...any) {
		res.Failures = append(res.Failures, Failure{Check: checkPositionBefore, Signal: sig, ClientOrderID: e.ClientOrderID,
			Detail: fmt.Sprintf(format, args...)})
	}
	if c.Before == "" {
		fail("entry %s asked for exits, yet its intent stores no position read before it: %s", e.ClientOrderID, e)
		return c
	}
	before, err := decimal.NewFromString(c.Before)
	if err != nil {
		fail("entry %s: its intent's position before %q is not a number", e.ClientOrderID, c.Before)
		return c
	}
	c.Opened = openedBy(e.Side, before, c.Filled)
	first := time.Duration(-1)
	if st := s.sigState[sig]; st != nil && len(st.sends) > 0 {
		first = slices.Min(st.sends)
	}
	if detail := positionSeen(e, before, fills, first); detail != "" {
		fail("%s", detail)
	} else {
		res.Checks[checkPositionBefore]++
	}
	return c
}

// positionSeen checks that before is the position after some prefix of the
// symbol's fills (in booking order) that ends before entry e's own fill
// and takes in every fill booked before the signal's first send (first,
// -1 when unknown): the gateway reads the position while handling a send
// and before it writes the entry's intent, so it saw a state of the venue
// in between. It returns why not, "" when it did.
func positionSeen(e venueOrder, before decimal.Decimal, fills []venueOrder, first time.Duration) string {
	own := slices.IndexFunc(fills, func(f venueOrder) bool { return f.ExchangeOrderID == e.ExchangeOrderID })
	if own < 0 {
		return fmt.Sprintf("entry %s is not among the venue's fills of %s: %s", e.ClientOrderID, e.Symbol, e)
	}
	// after[k] is the position after the first k fills.
	after := []decimal.Decimal{decimal.Zero}
	for _, f := range fills[:own] {
		q := executed(f)
		if f.Side == "sell" {
			q = q.Neg()
		}
		after = append(after, after[len(after)-1].Add(q))
	}
	from := 0
	for k, f := range fills[:own] {
		if first >= 0 && f.Booked > 0 && f.Booked < first {
			from = k + 1
		}
	}
	for k := from; k <= own; k++ {
		if after[k].Equal(before) {
			return ""
		}
	}
	var seen []string
	for k := from; k <= own; k++ {
		by := "none"
		if k > 0 {
			by = "#" + fills[k-1].ExchangeOrderID
		}
		seen = append(seen, fmt.Sprintf("%s after %s", after[k], by))
	}
	return fmt.Sprintf("entry %s (#%s, %s %s) stores the %s position before it as %s, which the venue never held between the signal's first send (%.3fs) and the entry's fill: it held %s",
		e.ClientOrderID, e.ExchangeOrderID, e.Side, executed(e), e.Symbol, before, first.Seconds(), strings.Join(seen, ", "))
}

// held is the position on an entry's side (a long for a buy, a short for
// a sell, as a positive quantity; zero or less when closed or flipped)
// after fill By.
type held struct {
	Qty decimal.Decimal
	By  venueOrder
}

func (h held) String() string { return fmt.Sprintf("%s after #%s", h.Qty, h.By.ExchangeOrderID) }

// heldAfter replays the symbol's fills in booking order and returns the
// position on entry e's side after e's own fill and after each later
// one; nil when e is not among them (positionSeen fails that).
func heldAfter(e venueOrder, fills []venueOrder) []held {
	own := slices.IndexFunc(fills, func(f venueOrder) bool { return f.ExchangeOrderID == e.ExchangeOrderID })
	if own < 0 {
		return nil
	}
	pos := decimal.Zero
	var out []held
	for k, f := range fills {
		q := executed(f)
		if f.Side != e.Side {
			q = q.Neg()
		}
		pos = pos.Add(q)
		if k >= own {
			out = append(out, held{pos, f})
		}
	}
	return out
}

// closed reports whether the position on the entry's side was closed or
// flipped by some fill after the entry's own: hoox then refuses an exit it
// had not sent yet, as a reduce-only exit would cut the next position.
// No time bounds the fill: the only time hoox records of the refusal
// (order_legs.settled_at, now()) is its transaction's start, which comes
// before the position read the refusal rests on.
func (c exitCover) closed() bool {
	return slices.ContainsFunc(c.After[min(1, len(c.After)):], func(h held) bool { return !h.Qty.IsPositive() })
}

// cappedTo reports whether q, less than what the entry opened, is the
// position held on its side after its own fill or some later one: hoox
// caps an exit it had not sent yet to what is held when less is left.
func (c exitCover) cappedTo(q decimal.Decimal) bool {
	if !q.IsPositive() || !q.LessThan(c.Opened) {
		return false
	}
	return slices.ContainsFunc(c.After, func(h held) bool { return h.Qty.Equal(q) })
}

// heldString lists the positions After, the first and last few when long.
func (c exitCover) heldString() string {
	const ends = 4
	var out []string
	for i, h := range c.After {
		if len(c.After) > 2*ends+1 && i == ends {
			out = append(out, fmt.Sprintf("… %d more …", len(c.After)-2*ends))
		}
		if len(c.After) <= 2*ends+1 || i < ends || i >= len(c.After)-ends {
			out = append(out, h.String())
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}
