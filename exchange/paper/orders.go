package paper

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/hoox/hoox/exchange"
)

// PaperOrder is one order in the paper book, as tests and drills inspect it.
// Rejected orders are never in the book.
type PaperOrder struct {
	ClientOrderID   string `db:"client_order_id"`
	ExchangeOrderID string `db:"exchange_order_id"`
	Symbol          string `db:"symbol"`
	// Side is the executed side, resolved from the position for close.
	Side      string          `db:"side"`
	OrderType string          `db:"order_type"`
	Quantity  decimal.Decimal `db:"quantity"`
	// Price is the order's own price, invalid when it had none.
	Price decimal.NullDecimal `db:"price"`
	// FillPrice is invalid while a limit order rests.
	FillPrice decimal.NullDecimal `db:"fill_price"`
	// Status is filled, open or cancelled (by Cancel, or by the venue for
	// what a reduce-only order could not reduce when it filled).
	Status exchange.Status `db:"status"`
	// FilledQuantity is what the order executed: all of Quantity when
	// filled, part or none of it for a reduce-only order cut to the
	// position when it filled, nothing otherwise. Listing only: the
	// insert never writes it.
	FilledQuantity decimal.Decimal `db:"filled_quantity"`
	// Test marks the test book, kept apart from the live one.
	Test bool `db:"test"`
	// CreatedAt is zero until the database stamps the row.
	CreatedAt time.Time `db:"created_at"`
	// TakeProfit and StopLoss are the exits recorded with the entry
	// (invalid: none); paper does not trigger them.
	TakeProfit decimal.NullDecimal `db:"take_profit"`
	StopLoss   decimal.NullDecimal `db:"stop_loss"`
	// ReduceOnly marks a reducing order (close, close_long, close_short,
	// reduce-only): while it rests, later reducing orders count it
	// (positionQuerySQL).
	ReduceOnly bool `db:"reduce_only"`
}

const ordersSQL = `
SELECT client_order_id, exchange_order_id, symbol, side, order_type,
       quantity, price, fill_price, status, ` + executedSQL + ` AS filled_quantity,
       test, created_at, take_profit, stop_loss, reduce_only
FROM paper_orders ORDER BY created_at, exchange_order_id`

// Orders lists every order in the book, oldest first, so tests can assert
// that exactly one order was placed. It is not meant for large books.
func (v *Venue) Orders(ctx context.Context) ([]PaperOrder, error) {
	rows, err := v.pool.Query(ctx, ordersSQL)
	if err != nil {
		return nil, fmt.Errorf("paper: list orders: %w", err)
	}
	orders, err := pgx.CollectRows(rows, pgx.RowToStructByName[PaperOrder])
	if err != nil {
		return nil, fmt.Errorf("paper: list orders: %w", err)
	}
	return orders, nil
}
