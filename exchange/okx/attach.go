package okx

import "github.com/hoox/hoox/exchange"

var _ exchange.AttachmentCapable = (*Venue)(nil)

// RefuseAttachments says which attached exits OKX cannot take: a
// take-profit and a stop-loss go on any entry, spot or swap, on the order
// itself (attachAlgoOrds, Post_Place_Order.md); a trailing stop (a
// percent or a price distance) on a swap entry, where it is placed as its own algo order
// once the entry filled (trailing.go). Anything else is refused before
// anything is claimed or sent.
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	if o.TrailingStop != nil {
		if exchange.IsClose(o.Action) {
			return "trailing_stop belongs to an entry, not a close"
		}
		return v.trailingRefusal(o.TrailingStop)
	}
	return ""
}
