package paper

import (
	"context"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

var _ exchange.Sizer = (*Venue)(nil)

// ReadsBalance is false: the paper venue keeps no balances, so
// percent_of_balance cannot be sized on it (the signal is refused before
// it is claimed).
func (v *Venue) ReadsBalance() bool { return false }

// SizingFacts answers with the price a market order would fill at (the
// order's price, else ReferencePrice) and the net position of o's symbol
// and book; paper has no lot step or minimum.
//
// The position is what executed, resting closes not taken off, as Binance
// and Bybit read it (positionRisk, position list): a percent_of_position
// close is a share of the whole position on every venue. While closes
// rest, placing it counts them (reduce), and a close larger than what they
// leave is refused saying how much they take, as hoox on Binance USDⓈ-M
// refuses it behind resting reduce-only orders.
func (v *Venue) SizingFacts(ctx context.Context, o exchange.Order, need exchange.SizingNeed) (exchange.SizingFacts, error) {
	if strings.HasPrefix(o.Symbol, invalidSymbolPrefix) {
		return exchange.SizingFacts{Refused: ReasonUnknownSymbol}, nil
	}
	out := exchange.SizingFacts{Price: v.referencePrice}
	if o.Price.Valid {
		out.Price = o.Price.Decimal
	}
	if need.Position {
		// The net executed position; the resting closes it also reads
		// are counted when the sized close is placed (reduce).
		var held bool
		var pos, restingBuys, restingSells decimal.Decimal
		if err := v.pool.QueryRow(ctx, positionQuerySQL, o.ClientOrderID, o.Symbol, o.Test).Scan(&held, &pos, &restingBuys, &restingSells); err != nil {
			return out, fmt.Errorf("paper: read position: %w: %w", exchange.ErrUnreachable, err)
		}
		out.Position = pos
	}
	return out, nil
}
