package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// An entry recorded open (the venue was still executing it) and filled
// later by its follow job gets its legs planned on that update, once, as an
// entry recorded filled does on insert: its exits are not lost.
func TestLegsArePlannedWhenAnOpenPrimaryFillsLater(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	o := order("hx-entry-0")
	tp := order("hx-entry-tp")
	tp.Side, tp.ReduceOnly, tp.Exit = "sell", true, exchange.RoleTakeProfit
	o.Legs = []exchange.Leg{{Role: exchange.RoleTakeProfit, Order: tp}}
	in := &db.Intent{ClientOrderID: o.ClientOrderID, LockKey: "k:e", TraceID: "k:e", Fingerprint: "fp", Mode: "live",
		KeySource: "client", Exchange: "paper", Order: o, Signal: []byte(`{}`), ReceivedAt: time.Now()}
	require.NoError(t, db.WriteIntent(ctx, pool, in, true))
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status) VALUES ($1, 'k:e', $2, 'paper', 'BTCUSDT', 'buy', 'buy', 'market', 0.5, 'live', 'open')`,
		uuid.New(), o.ClientOrderID)
	require.NoError(t, err)
	legs := func() int {
		return apptest.Count(t, pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = 'hx-entry-0'`)
	}
	require.Zero(t, legs(), "nothing is planned while the entry is open")

	u := db.OrderUpdate{Status: exchange.StatusFilled, FilledQuantity: decimal.RequireFromString("0.5"),
		FillPrice: decimal.NewNullDecimal(decimal.NewFromInt(100))}
	changed, err := db.ApplyOrderUpdate(ctx, pool, o.ClientOrderID, u, nil)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, 1, legs(), "the fill plans the take-profit")
	require.Equal(t, "hx-entry-tp", apptest.Text(t, pool, `SELECT client_order_id FROM order_legs WHERE parent_client_order_id = 'hx-entry-0'`))

	_, err = pool.Exec(ctx, `UPDATE orders SET status = 'filled', filled_quantity = 0.5 WHERE client_order_id = $1`, o.ClientOrderID)
	require.NoError(t, err)
	require.Equal(t, 1, legs(), "a second update plans nothing more")
}
