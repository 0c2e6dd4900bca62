package okx

import "github.com/hoox/hoox/exchange"

var _ exchange.AttachmentCapable = (*Venue)(nil)

// ReasonSpotTPSL refuses take_profit/stop_loss on okx spot.
const ReasonSpotTPSL = "take_profit/stop_loss are not supported on okx spot: OKX would place them as orders of its own once the entry filled (attachAlgoOrds), which hoox neither records nor follows, so the strategy's spot ledger would still count the coins they sold and its next close would sell another strategy's; send the entry without them and exit with a close signal, or use a market where hoox places the exits itself (binance spot) or where they act on a position (okx-swap)"

// RefuseAttachments says which attached exits OKX cannot take: a
// take-profit and a stop-loss go on a swap entry, on the order itself
// (attachAlgoOrds, Post_Place_Order.md), and a trailing stop (a percent
// or a price distance) on a swap entry, where it is placed as its own
// algo order once the entry filled (trailing.go). Spot takes none: an exit
// OKX places for a spot entry sells coins outside hoox's spot ledger
// (ReasonSpotTPSL). Anything refused here is refused before anything is
// claimed or sent.
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	if !v.swap() && (o.TakeProfit != nil || o.StopLoss != nil) {
		return ReasonSpotTPSL
	}
	if o.TrailingStop != nil {
		if exchange.IsClose(o.Action) {
			return "trailing_stop belongs to an entry, not a close"
		}
		return v.trailingRefusal(o.TrailingStop)
	}
	return ""
}
