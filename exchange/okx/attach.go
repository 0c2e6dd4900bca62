package okx

import "github.com/hoox/hoox/exchange"

var _ exchange.AttachmentCapable = (*Venue)(nil)

// ReasonTrailingStop refuses a trailing stop: OKX has one only as a
// separate algo order (ordType move_order_stop at place-algo-order), not
// among attachAlgoOrds, and hoox does not place that yet.
const ReasonTrailingStop = "trailing_stop is not supported on okx yet: OKX places a trailing stop as a separate algo order, which hoox does not send yet; send the entry with take_profit/stop_loss only"

// RefuseAttachments says which attached exits OKX cannot take on the
// order itself: a take-profit and a stop-loss go on any entry, spot or
// swap (attachAlgoOrds, Post_Place_Order.md); a trailing stop does not.
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	if o.TrailingStop != nil {
		return ReasonTrailingStop
	}
	return ""
}
