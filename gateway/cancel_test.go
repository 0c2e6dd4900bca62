package gateway_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
)

// cancelBundle is a gateway on the paper venue whose AfterVenue hook
// "crashes" (panics) after the venue's answer while armed.
type cancelBundle struct {
	pool  *pgxpool.Pool
	paper *paper.Venue
	svc   *gateway.Service
	// crashAfter, when above zero, counts venue answers down and panics
	// at zero.
	crashAfter atomic.Int32
}

func setupCancel(t *testing.T) *cancelBundle {
	t.Helper()
	url := pgtest.NewDatabase(t)
	open := func() *pgxpool.Pool { return pgtest.OpenPool(t, url) }
	b := &cancelBundle{pool: open()}
	b.paper = paper.New(paper.Config{Pool: open()})
	b.svc = gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: open(),
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"paper": b.paper}),
		AfterVenue: func(string) {
			if b.crashAfter.Load() > 0 && b.crashAfter.Add(-1) == 0 {
				panic(crash{})
			}
		}})
	t.Cleanup(b.svc.Close)
	return b
}

func (b *cancelBundle) limit(t *testing.T, key, symbol, price string) *gateway.Outcome {
	t.Helper()
	out, err := b.svc.Execute(context.Background(), input(t, `{"exchange":"paper","symbol":"`+symbol+`","action":"buy","quantity":"1",`+
		`"order_type":"limit","price":"`+price+`","trace_id":"`+key+`"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	return out
}

func cancelIDs(orders []db.OrderRow) []string {
	ids := []string{}
	for _, o := range orders {
		ids = append(ids, o.ClientOrderID)
	}
	return ids
}

// A cancel signal cancels the symbol's open hoox orders at the venue and in
// the orders table, lists them, leaves other symbols' and filled orders
// alone, and a repeat is a 409 that lists the same orders.
func TestCancelCancelsTheSymbolsOpenOrders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupCancel(t)
	first := b.limit(t, "l1", "BTCUSDT", "90")
	second := b.limit(t, "l2", "BINANCE:BTCUSDT.P", "80")
	other := b.limit(t, "l3", "ETHUSDT", "10")
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"m1"}`))
	require.NoError(t, err)

	body := `{"exchange":"paper","symbol":"btcusdt","action":"cancel","trace_id":"c1"}`
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Nil(t, out.Order)
	require.ElementsMatch(t, []string{first.Order.ClientOrderID, second.Order.ClientOrderID}, cancelIDs(out.Cancelled))
	for _, o := range out.Cancelled {
		require.Equal(t, "cancelled", o.Status)
	}
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'cancelled' AND cancelled_by = 'k:c1' AND final_at IS NOT NULL`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'open' AND client_order_id = '`+other.Order.ClientOrderID+`'`))
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'filled'`))
	book, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	cancelledAtVenue := 0
	for _, o := range book {
		if o.Status == exchange.StatusCancelled {
			cancelledAtVenue++
		}
	}
	require.Equal(t, 2, cancelledAtVenue, "cancelled at the venue too")
	require.Equal(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:l1' AND event = 'order_cancelled'`),
		"each order's own trace says it was cancelled")

	_, err = b.svc.Execute(ctx, input(t, body))
	ge := requireCode(t, err, codes.Duplicate)
	require.ElementsMatch(t, cancelIDs(out.Cancelled), cancelIDs(ge.Original.Cancelled), "the repeat shows the original outcome")

	// Nothing left open: 200 with an empty list.
	out, err = b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"c2"}`))
	require.NoError(t, err)
	require.NotNil(t, out.Cancelled)
	require.Empty(t, out.Cancelled)
}

// A crash between two cancels (the first order already cancelled at the
// venue, nothing recorded) rolls the claim back; the sender's retry cancels
// the rest and records every order cancelled, once.
func TestCancelCrashBetweenCancelsIsFinishedByTheRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupCancel(t)
	b.limit(t, "a", "BTCUSDT", "90")
	b.limit(t, "b", "BTCUSDT", "91")
	b.limit(t, "c", "BTCUSDT", "92")

	in := input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"crash"}`)
	b.crashAfter.Store(2)
	require.PanicsWithValue(t, crash{}, func() { _, _ = b.svc.Execute(ctx, in) })
	book, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	atVenue := 0
	for _, o := range book {
		if o.Status == exchange.StatusCancelled {
			atVenue++
		}
	}
	require.Equal(t, 2, atVenue, "two orders were cancelled at the venue before the crash")
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'cancelled'`), "and none recorded")
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:crash'`))

	out, err := b.svc.Execute(ctx, in)
	require.NoError(t, err)
	require.Len(t, out.Cancelled, 3)
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'cancelled' AND cancelled_by = 'k:crash'`))
	require.Equal(t, 3, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE event = 'order_cancelled'`), "each recorded once")
}

// A venue that fails part-way answers 503 and records nothing; the retry
// finishes.
func TestCancelVenueFailurePartWayIsFinishedByTheRetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupCancel(t)
	b.limit(t, "a", "BTCUSDT", "90")
	b.limit(t, "b", "BTCUSDT", "91")
	in := input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trace_id":"flaky"}`)
	failing := &failSecond{Venue: b.paper}
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: b.pool,
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"paper": failing})})
	t.Cleanup(svc.Close)
	_, err := svc.Execute(ctx, in)
	requireCode(t, err, codes.Unavailable)
	require.Equal(t, 0, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'cancelled'`))

	out, err := svc.Execute(ctx, in)
	require.NoError(t, err)
	require.Len(t, out.Cancelled, 2)
	require.Equal(t, 2, count(t, b.pool, `SELECT count(*) FROM orders WHERE status = 'cancelled' AND cancelled_by = 'k:flaky'`))
}

// failSecond is the paper venue whose second Cancel fails unreachable.
type failSecond struct {
	*paper.Venue
	n atomic.Int32
}

func (f *failSecond) Cancel(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if f.n.Add(1) == 2 {
		return exchange.Report{}, exchange.ErrUnreachable
	}
	return f.Venue.Cancel(ctx, o)
}

// A venue that cannot cancel refuses the signal before anything is claimed.
func TestCancelOnAVenueWithoutCancelIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	svc := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: b.pool,
		Venues: exchange.NewRegistry(map[string]exchange.Venue{"plain": plainVenue{b.paper}})})
	t.Cleanup(svc.Close)
	_, err := svc.Execute(context.Background(), input(t, `{"exchange":"plain","symbol":"BTCUSDT","action":"cancel","trace_id":"x"}`))
	ge := requireCode(t, err, codes.InvalidSignal)
	require.Contains(t, ge.Detail, "cancel is not supported")
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
}

// plainVenue hides the paper venue's Cancel.
type plainVenue struct{ exchange.Venue }

// A cancel through the real adapters: the symbol's resting hoox orders
// (sent as BINANCE:BTCUSDT.P, recorded as BTCUSDT) are cancelled at each
// venue's fake and recorded cancelled; an order placed by hand at the
// venue, under a client order ID that is not hoox's, is left alone.
func TestCancelThroughTheVenueAdapters(t *testing.T) {
	t.Parallel()
	b := setupAdapters(t)
	ctx := context.Background()
	// An order the trader placed by hand on the same symbol.
	manual, err := binance.New(binance.Config{Market: binance.MarketSpot, APIKey: b.binance.APIKey(), APISecret: b.binance.APISecret(),
		BaseURL: b.binance.URL})
	require.NoError(t, err)
	byHand := exchange.Order{ClientOrderID: "my-own-order-1", Symbol: "BTCUSDT", Action: "buy", Side: "buy", OrderType: "limit",
		Quantity: decimal.RequireFromString("0.01"), Price: decimal.NewNullDecimal(decimal.RequireFromString("30000"))}
	_, err = manual.Place(ctx, byHand)
	require.NoError(t, err)
	t.Cleanup(func() {
		r, err := manual.Lookup(ctx, byHand)
		require.NoError(t, err)
		require.Equal(t, exchange.StatusOpen, r.Status, "the order placed by hand is never cancelled")
	})
	for _, name := range []string{"binance", "binance-futures", "bybit", "bybit-spot"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ids []string
			for i := range 2 {
				out, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
					`{"exchange":%q,"symbol":"BINANCE:BTCUSDT.P","action":"buy","quantity":"0.01","price":"30000","trace_id":"rest-%s-%d"}`, name, name, i)))
				require.NoError(t, err)
				require.Equal(t, "open", out.Order.Status)
				ids = append(ids, out.Order.ClientOrderID)
			}
			out, err := b.svc.Execute(ctx, input(t, fmt.Sprintf(
				`{"exchange":%q,"symbol":"BTCUSDT","action":"cancel","trace_id":"cancel-%s"}`, name, name)))
			require.NoError(t, err)
			require.ElementsMatch(t, ids, cancelIDs(out.Cancelled))
			require.Equal(t, 2, count(t, b.pool, fmt.Sprintf(
				`SELECT count(*) FROM orders WHERE status = 'cancelled' AND cancelled_by = 'k:cancel-%s'`, name)))
			for _, id := range ids {
				require.Equal(t, "cancelled", b.venueStatus(t, name, id), "cancelled at the venue")
			}
		})
	}
}

// venueStatus is the fake's status of the order under clientOrderID, in
// hoox's words.
func (b *adaptersBundle) venueStatus(t *testing.T, exchangeName, clientOrderID string) string {
	t.Helper()
	switch exchangeName {
	case "binance", "binance-futures":
		for _, o := range b.binance.Orders() {
			if o.ClientOrderID == clientOrderID && o.Status == "CANCELED" {
				return "cancelled"
			}
		}
	case "bybit", "bybit-spot":
		category := bybitfake.CategoryLinear
		if exchangeName == "bybit-spot" {
			category = bybitfake.CategorySpot
		}
		o, ok := b.bybit.Order(category, clientOrderID)
		if ok && (o.Status == "Cancelled" || o.Status == "PartiallyFilledCanceled") {
			return "cancelled"
		}
	}
	return "not cancelled"
}

// README's cancel template, sent by a strategy that carries its position
// ("market_position": "{{strategy.market_position}}", "flat" while it
// cancels its resting entry) and its usual quantity, cancels the resting
// entry and sells nothing (it was read as a close of the whole position:
// the long sold at market, the entry left resting).
func TestCancelWithAFlatPositionCancelsAndSellsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	_, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","order_type":"market","trace_id":"long"}`))
	require.NoError(t, err)
	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.5","price":"80","trace_id":"entry"}`))
	require.NoError(t, err)
	require.Equal(t, "open", entry.Order.Status)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","market_position":"flat","quantity":"0.5","comment":"cancel-entry","timestamp":"2024-05-01T12:00:00Z"}`))
	require.NoError(t, err)
	if out.Order != nil {
		t.Errorf("a cancel placed an order: %s %s %s reduce-only close, status %s", out.Order.Side, out.Order.Quantity, out.Order.OrderType, out.Order.Status)
	}
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM orders WHERE side = 'sell'"), "nothing is sold: the long stays open")
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:entry' AND status = 'cancelled'"), "the resting entry is cancelled")
}

// A cancel sent from a strategy's entry template carries the entry's exits;
// a cancel reads none, so it is not refused for exits the venue would not
// take (paper takes no trailing stop): it cancels the resting entry
// (it was a 422 unsupported, and the entry kept resting).
func TestCancelCarryingExitsTheVenueRefusesStillCancels(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	entry, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","price":"80","trace_id":"entry"}`))
	require.NoError(t, err)
	require.Equal(t, "open", entry.Order.Status)

	out, err := b.svc.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"cancel","trailing_stop":"1%","stop_loss":"2%","trace_id":"cancel"}`))
	require.NoError(t, err, "a cancel is not refused for exits it never reads")
	require.Len(t, out.Cancelled, 1)
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:entry' AND status = 'cancelled'"), "the resting entry is cancelled")
}
