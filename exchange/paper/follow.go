package paper

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
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

// crossingSQL lists, oldest first and locked, the resting limit orders of
// symbol $1 in book $2 that price $3 crosses: a buy at or above it, a sell
// at or below it.
const crossingSQL = `
SELECT client_order_id, side, quantity, price, reduce_only
FROM paper_orders
WHERE symbol = $1 AND test = $2 AND status = 'open' AND order_type = 'limit'
  AND ((side = 'buy' AND price >= $3) OR (side = 'sell' AND price <= $3))
ORDER BY created_at, exchange_order_id
FOR UPDATE`

// netPositionSQL is the net executed position of symbol $1 in book $2.
const netPositionSQL = `
SELECT COALESCE(sum(CASE side WHEN 'buy' THEN ` + executedSQL + ` ELSE -` + executedSQL + ` END), 0)
FROM paper_orders WHERE symbol = $1 AND test = $2`

// fillSQL ends a crossed order: filled in full ($4 NULL), or cancelled
// with what a reduce-only order could still reduce ($4), at its limit
// price when anything executed ($3).
const fillSQL = `
UPDATE paper_orders SET status = $2, fill_price = $3, filled_quantity = $4
WHERE client_order_id = $1`

// crossed is a resting limit order that a price crosses.
type crossed struct {
	ClientOrderID string          `db:"client_order_id"`
	Side          string          `db:"side"`
	Quantity      decimal.Decimal `db:"quantity"`
	Price         decimal.Decimal `db:"price"`
	ReduceOnly    bool            `db:"reduce_only"`
}

// SetPrice is the paper venue's price feed: the paper venue has no market
// data of its own, so a resting limit order fills only when a price is set
// that crosses it (a buy limit at or above the price, a sell at or below),
// at its limit price. Tests and drills call it; a paper deployment's limit
// orders otherwise rest until a cancel signal cancels them.
//
// Crossed orders fill oldest first, each against the position the earlier
// ones left. A plain order fills in full. A reduce-only order fills at most
// the position left on its reducing side — a plain order placed after it
// may have shrunk, closed or flipped the position — and the rest ends
// cancelled, with nothing filled when nothing is left to reduce: Binance
// USDⓈ-M and Bybit linear end what a reduce-only order cannot reduce the
// same way, so a reduce-only order never grows a position nor opens the
// other side. It returns how many orders executed (in full or in part).
func (v *Venue) SetPrice(ctx context.Context, symbol string, test bool, price decimal.Decimal) (int64, error) {
	var executed int64
	err := pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		// The lock placeReducing takes: a close placed meanwhile counts
		// the fills, and the fills the closes placed before.
		if err := lockPosition(ctx, tx, symbol, test); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, crossingSQL, symbol, test, pgconv.Numeric(price))
		if err != nil {
			return fmt.Errorf("crossed orders: %w", err)
		}
		orders, err := pgx.CollectRows(rows, pgx.RowToStructByName[crossed])
		if err != nil {
			return fmt.Errorf("crossed orders: %w", err)
		}
		var pos decimal.Decimal
		if err := tx.QueryRow(ctx, netPositionSQL, symbol, test).Scan(&pos); err != nil {
			return fmt.Errorf("read position: %w", err)
		}
		batch := &pgx.Batch{}
		for _, o := range orders {
			fill := o.Quantity
			if o.ReduceOnly {
				fill = decimal.Min(fill, reducible(o.Side, pos))
			}
			if o.Side == "buy" {
				pos = pos.Add(fill)
			} else {
				pos = pos.Sub(fill)
			}
			status, at, cut := exchange.StatusFilled, decimal.NewNullDecimal(o.Price), decimal.NullDecimal{}
			if fill.LessThan(o.Quantity) {
				status, cut = exchange.StatusCancelled, decimal.NewNullDecimal(fill)
			}
			if fill.IsPositive() {
				executed++
			} else {
				at = decimal.NullDecimal{}
			}
			batch.Queue(fillSQL, o.ClientOrderID, string(status), pgconv.NullNumeric(at), pgconv.NullNumeric(cut))
		}
		if err := tx.SendBatch(ctx, batch).Close(); err != nil {
			return fmt.Errorf("fill crossed orders: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("paper: set price: %w", err)
	}
	return executed, nil
}

// reducible is how much an order on side can reduce position pos: its
// size when pos is on the other side, else nothing.
func reducible(side string, pos decimal.Decimal) decimal.Decimal {
	switch {
	case side == "sell" && pos.IsPositive():
		return pos
	case side == "buy" && pos.IsNegative():
		return pos.Neg()
	}
	return decimal.Zero
}
