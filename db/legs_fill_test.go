package db_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
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

// A limit entry that ends cancelled or expired after a partial fill gets
// its exits planned (migration 00018) — not a split close's further parts,
// and nothing when nothing filled; an entry ended by hoox's own cancel
// signal (cancelled_by) has them recorded not_placed at once, with a
// leg_failed event saying why, so nothing is left for the sweeper to send.
func TestExitLegsArePlannedWhenAPartlyFilledEntryEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	entry := func(id string) {
		t.Helper()
		o := order(id)
		o.OrderType, o.Price = "limit", decimal.NewNullDecimal(decimal.NewFromInt(100))
		tp, sl, part := order(id+"-tp"), order(id+"-sl"), order(id+"-part")
		tp.Side, tp.ReduceOnly, tp.Exit = "sell", true, exchange.RoleTakeProfit
		sl.Side, sl.ReduceOnly, sl.Exit = "sell", true, exchange.RoleStopLoss
		o.Legs = []exchange.Leg{{Role: exchange.RoleTakeProfit, Order: tp}, {Role: exchange.RoleStopLoss, Order: sl},
			{Role: exchange.RoleClosePart, Order: part}}
		in := &db.Intent{ClientOrderID: id, LockKey: "k:" + id, TraceID: "k:" + id, Fingerprint: "fp", Mode: "live",
			KeySource: "client", Exchange: "paper", Order: o, Signal: []byte(`{}`), ReceivedAt: time.Now()}
		require.NoError(t, db.WriteIntent(ctx, pool, in, true))
		_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
			quantity, price, mode, status) VALUES ($1, $2, $3, 'paper', 'BTCUSDT', 'buy', 'buy', 'limit', 0.5, 100, 'live', 'open')`,
			uuid.New(), "k:"+id, id)
		require.NoError(t, err)
	}
	end := func(id string, st exchange.Status, filled, cancelledBy string) {
		t.Helper()
		u := db.OrderUpdate{Status: st, FilledQuantity: decimal.RequireFromString(filled), CancelledBy: cancelledBy,
			AvgPrice: decimal.NewNullDecimal(decimal.NewFromInt(100))}
		changed, err := db.ApplyOrderUpdate(ctx, pool, id, u, nil)
		require.NoError(t, err)
		require.True(t, changed)
	}
	legs := func(id string) string {
		return apptest.Text(t, pool, `SELECT coalesce(string_agg(role || ':' || coalesce(outcome, 'open'), ',' ORDER BY seq), '')
			FROM order_legs WHERE parent_client_order_id = '`+id+`'`)
	}

	for _, id := range []string{"hx-cancelled", "hx-expired", "hx-unfilled", "hx-by-signal"} {
		entry(id)
	}
	end("hx-cancelled", exchange.StatusCancelled, "0.2", "")
	end("hx-expired", exchange.StatusExpired, "0.3", "")
	end("hx-unfilled", exchange.StatusCancelled, "0", "")
	end("hx-by-signal", exchange.StatusCancelled, "0.2", "k:the-cancel")

	require.Equal(t, "take_profit:open,stop_loss:open", legs("hx-cancelled"), "the exits of what filled, open for the leg runner")
	require.Equal(t, "take_profit:open,stop_loss:open", legs("hx-expired"))
	require.Empty(t, legs("hx-unfilled"), "nothing filled: no position, no exits")
	require.Equal(t, "take_profit:not_placed,stop_loss:not_placed", legs("hx-by-signal"),
		"the trader's cancel leaves no hoox order resting: planned and settled at once")
	require.Equal(t, 2, apptest.Count(t, pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:hx-by-signal'
		AND event = 'leg_failed' AND detail->>'cancelled_by' = 'k:the-cancel' AND detail->>'filled_quantity' = '0.2'`))
	require.Empty(t, openLegsOf(t, pool, "hx-by-signal"), "the sweeper has nothing to send for it")

	// An entry the sweeper or a reconcile finds already ended records it
	// with an insert: planned the same way.
	o := order("hx-found-ended")
	tp := order("hx-found-ended-tp")
	tp.Side, tp.ReduceOnly, tp.Exit = "sell", true, exchange.RoleTakeProfit
	o.Legs = []exchange.Leg{{Role: exchange.RoleTakeProfit, Order: tp}}
	in := &db.Intent{ClientOrderID: o.ClientOrderID, LockKey: "k:f", TraceID: "k:f", Fingerprint: "fp", Mode: "live",
		KeySource: "client", Exchange: "paper", Order: o, Signal: []byte(`{}`), ReceivedAt: time.Now()}
	require.NoError(t, db.WriteIntent(ctx, pool, in, true))
	_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, filled_quantity) VALUES ($1, 'k:f', $2, 'paper', 'BTCUSDT', 'buy', 'buy', 'limit', 0.5, 'live', 'expired', 0.1)`,
		uuid.New(), o.ClientOrderID)
	require.NoError(t, err)
	require.Equal(t, "take_profit:open", legs("hx-found-ended"))
}

func openLegsOf(t *testing.T, pool *pgxpool.Pool, parent string) []db.OpenLegs {
	t.Helper()
	open, err := db.ListOpenLegs(context.Background(), pool, -time.Hour, 100)
	require.NoError(t, err)
	var out []db.OpenLegs
	for _, o := range open {
		if o.ParentClientOrderID == parent {
			out = append(out, o)
		}
	}
	return out
}
