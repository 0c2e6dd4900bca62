package exchange

import (
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// WholePosition reports whether s sized a close as all of the position: a
// percent_of_position close of 100 % (or more). Such a close means "leave
// no position", as a close without a quantity does: resting reduce-only
// orders that would block it protect nothing once it fills, so a venue
// adapter may cancel them first (Binance USDⓈ-M, paper), where a smaller
// share must leave them for the part it keeps open.
func WholePosition(s *Sizing) bool {
	if s == nil || s.Type != QuantityPercentOfPosition {
		return false
	}
	asked, err := decimal.NewFromString(strings.TrimSuffix(strings.TrimSpace(s.Asked), "%"))
	return err == nil && asked.GreaterThanOrEqual(decimal.NewFromInt(100))
}

// ClosedWhole judges a filled close o (r, the venue's answer or lookup of
// it) for the adapters that cancel the exits of the position a close
// closed (Binance USDⓈ-M, OKX swap): whole says o closed all of the
// position it was sized for — a close of the whole position in one order
// (no Split) that executed all it was sent for — and cutoff is when that
// position was read, the exits created before it being that position's.
// started is the adapter's own time before its position read in Place
// (zero from Lookup, where it is not known: cutoff stays zero). A close
// sized before its intent (Partial: a percent_of_position share, a split
// close's parts) was sized from a read then, which came before Place: an
// entry that filled after it is not among what it closed. Only a share of
// 100 % of that read is whole, with the read's time
// (Sizing.PositionReadAt) as cutoff; without it, such a close closes the
// position only on a flat read.
func ClosedWhole(o Order, r Report, started time.Time) (whole bool, cutoff time.Time) {
	whole = o.Split == nil && r.FilledQuantity.GreaterThanOrEqual(r.Quantity)
	if !o.Partial {
		return whole, started
	}
	whole = whole && WholePosition(o.Sizing) && !o.Sizing.PositionReadAt.IsZero()
	if whole && !started.IsZero() {
		return true, o.Sizing.PositionReadAt
	}
	return whole, started
}

// ClosedExits is what a filled close o (r, the venue's answer or lookup of
// it) does to the exits of the position it closed, for the adapters that
// cancel them (Binance USDⓈ-M, OKX swap): only a close that executed
// something (an exit is not a close of a position) calls cancel, with
// ClosedWhole's judgement and cut-off; what cancel cancelled joins
// r.CancelledFirst, and closed and beside (a position read beside the
// close) become r.ClosedPosition and r.EntryBeside.
func ClosedExits(o Order, r Report, started time.Time, cancel func(cutoff time.Time, whole bool) (cancelled []CancelledOrder, closed, beside bool)) Report {
	if !IsClose(o.Action) || o.Exit != "" || r.Status != StatusFilled || !r.FilledQuantity.IsPositive() {
		return r
	}
	whole, cutoff := ClosedWhole(o, r, started)
	cancelled, closed, beside := cancel(cutoff, whole)
	r.CancelledFirst = append(r.CancelledFirst, cancelled...)
	r.ClosedPosition, r.EntryBeside = closed, closed && beside
	return r
}
