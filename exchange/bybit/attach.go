package bybit

import (
	"github.com/hoox/hoox/exchange"
)

var _ exchange.AttachmentCapable = (*Venue)(nil)

// Reasons for refusing attached exits, before anything is sent.
const (
	ReasonTrailingStop     = "trailing_stop is not supported on bybit-spot: Bybit has a trailing stop only as a setting of a derivatives position (POST /v5/position/trading-stop takes category linear, inverse or option); send the entry without it"
	ReasonTrailingWithTPSL = "bybit takes trailing_stop without take_profit/stop_loss in one signal: the trailing stop is the whole position's setting (tpslMode Full, set after the fill), take-profit and stop-loss ride on the entry for its own size (tpslMode Partial), and Bybit's docs do not say it accepts the two modes on one position; send the trailing stop alone, or take_profit/stop_loss alone"
	ReasonSpotTPSL         = "take_profit/stop_loss are not supported on bybit-spot: Bybit would place them as orders of its own once the entry filled (takeProfit/stopLoss on a spot limit order), which hoox neither records nor follows, so the strategy's spot ledger would still count the coins they sold and its next close would sell another strategy's; send the entry without them and exit with a close signal, or use a market where hoox places the exits itself (binance spot) or where they act on a position (bybit)"
)

// RefuseAttachments says which attached exits Bybit cannot take: a
// take-profit and a stop-loss go on any linear entry (create-order.mdx); a
// trailing stop exists only as a linear position's setting
// (trading-stop.mdx), set as a leg after the fill (TrailsAsLeg), and
// alone: not beside the entry's own take-profit or stop-loss
// (ReasonTrailingWithTPSL). Spot takes none: Bybit takes TP/SL on a spot
// limit order, but the orders it then places sell coins outside hoox's
// spot ledger (ReasonSpotTPSL).
func (v *Venue) RefuseAttachments(o exchange.Order) string {
	switch {
	case o.TrailingStop != nil && v.cfg.Market == MarketSpot:
		return ReasonTrailingStop
	case o.TrailingStop != nil && (o.TakeProfit != nil || o.StopLoss != nil):
		return ReasonTrailingWithTPSL
	case (o.TakeProfit != nil || o.StopLoss != nil) && v.cfg.Market == MarketSpot:
		return ReasonSpotTPSL
	}
	return ""
}
