package bybit

import (
	"github.com/hoox/hoox/exchange"
)

var _ exchange.AttachmentCapable = (*Venue)(nil)

// Reasons for refusing attached exits, before anything is sent.
const (
	ReasonTrailingStop = "trailing_stop is not supported on bybit yet: Bybit sets a trailing stop on the position (POST /v5/position/trading-stop) once the entry has filled, a second request hoox does not make yet; send the entry with take_profit/stop_loss only"
	ReasonSpotTPSL     = "bybit-spot takes take_profit/stop_loss only on a limit order (create-order.mdx: \"Spot Limit order supports take profit, stop loss\"); send a limit entry (with price) or none"
)

// RefuseAttachments says which attached exits Bybit cannot take on the
// order itself (create-order.mdx): a take-profit and a stop-loss go on any
// linear entry and on a spot limit entry; a trailing stop exists only as
// a position setting (trading-stop.mdx), not on an order.
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	switch {
	case o.TrailingStop != nil:
		return ReasonTrailingStop
	case (o.TakeProfit != nil || o.StopLoss != nil) && v.cfg.Market == MarketSpot && o.OrderType != "limit":
		return ReasonSpotTPSL
	}
	return ""
}
