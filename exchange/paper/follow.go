package paper

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgconv"
)

var _ exchange.Canceler = (*Venue)(nil)

// cancelSQL cancels a resting order; it matches nothing once the order is
// final, which Cancel then reports as it is (idempotent, as a venue's
// cancel is for the caller: the order ends cancelled or already ended).
const cancelSQL = `
UPDATE paper_orders SET status = 'cancelled'
WHERE client_order_id = $1 AND status = 'open'`

// Cancel cancels the resting order held under o.ClientOrderID and reports
// it. An order already final (filled, cancelled) is reported as it is;
// exchange.ErrNotFound when the book holds none.
func (v *Venue) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if v.Faults().Unreachable {
		return exchange.Report{}, fmt.Errorf("paper: fault drill: %w", exchange.ErrUnreachable)
	}
	if _, err := v.pool.Exec(ctx, cancelSQL, o.ClientOrderID); err != nil {
		return exchange.Report{}, classify("cancel order", err)
	}
	return v.Lookup(ctx, o)
}

// crossSQL fills, at their own limit price, the resting limit orders of a
// symbol and book that price crosses: a buy at or above it, a sell at or
// below it.
const crossSQL = `
UPDATE paper_orders SET status = 'filled', fill_price = price
WHERE symbol = $1 AND test = $2 AND status = 'open' AND order_type = 'limit'
  AND ((side = 'buy' AND price >= $3) OR (side = 'sell' AND price <= $3))`

// SetPrice is the paper venue's price feed: the paper venue has no market
// data of its own, so a resting limit order fills only when a price is set
// that crosses it (a buy limit at or above the price, a sell at or below),
// at its limit price and in full. Tests and drills call it; a paper
// deployment's limit orders otherwise rest until a cancel signal cancels
// them. It returns how many orders filled.
func (v *Venue) SetPrice(ctx context.Context, symbol string, test bool, price decimal.Decimal) (int64, error) {
	tag, err := v.pool.Exec(ctx, crossSQL, symbol, test, pgconv.Numeric(price))
	if err != nil {
		return 0, fmt.Errorf("paper: set price: %w", err)
	}
	return tag.RowsAffected(), nil
}
