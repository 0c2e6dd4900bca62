package venuekit

import (
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// KeepsPlannedSide reports whether close o may go out on side, the side
// that reduces the position the adapter reads at send time. A close the
// gateway planned before its intent (o.Partial with o.Side set: a part of
// a split close, a percent_of_position exit) was sized against the
// position read then, on the side that reduced it; sent later (a leg
// after a 429, the sweeper, a resend after a crash) it must still reduce
// that position. If the position has since turned the other way (a
// reversal, another strategy, a manual trade), the side derived from it
// would close a position this close was never meant to touch, and the
// order would no longer match the stored plan (exchange.Matches), so a
// lost answer would leave it unrecorded. The adapter then refuses the
// close as having no position to close, sending nothing. A plain close
// (no planned side) closes whatever is held, as before.
func KeepsPlannedSide(o exchange.Order, side string) bool {
	return !o.Partial || o.Side == "" || o.Side == side
}

// SetsLeverage reports whether o's leverage is set before it is sent
// against position (signed, short < 0, in o's quantity units, read just
// before): only when o asks for one and opens or adds to a position
// (exchange.OpenedBy). A close, a reduce-only order and a plain order that
// only reduces the position (TradingView's exit in contracts: a sell of
// the long) open nothing, and the leverage of a position being reduced
// does not matter; a venue refusing the change because of that very
// position (Binance -2027 or -4161, Bybit 110013, OKX 59107) would
// otherwise refuse the exit and leave the position open.
func SetsLeverage(o exchange.Order, position decimal.Decimal) bool {
	return o.Leverage > 0 && !exchange.IsClose(o.Action) && !o.ReduceOnly &&
		exchange.OpenedBy(o.Side, position, o.Quantity).IsPositive()
}
