package db_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
)

// spotOrder inserts an order row as the gateway records a spot order
// (base_asset set) — or a derivatives one when base is "" — and returns
// its client order ID.
func spotOrder(t *testing.T, pool *pgxpool.Pool, side, base, strategy, status, filled string) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7())
	coid := "hx" + strings.ReplaceAll(id.String(), "-", "")[:30]
	_, err := pool.Exec(context.Background(), `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side,
		order_type, quantity, mode, status, filled_quantity, strategy, base_asset)
		VALUES ($1, 'k:'||$2, $2, 'binance', 'BTCUSDT', $3::text, $3, 'limit', 1, 'live', $4, $5::numeric, $6, NULLIF($7, ''))`,
		id, coid, side, status, filled, strategy, base)
	require.NoError(t, err)
	return coid
}

func ledger(t *testing.T, pool *pgxpool.Pool, strategy string) string {
	t.Helper()
	es, err := db.ListLedger(context.Background(), pool, db.LedgerFilter{Strategy: strategy, HasStrategy: true})
	require.NoError(t, err)
	if len(es) == 0 {
		return "none"
	}
	require.Len(t, es, 1)
	return es[0].Quantity.String()
}

// Whatever writes the order row — an insert by the gateway, the reconcile
// or the sweeper, or an update by a job that follows an open order to its
// fills — the ledger moves by what changed, so each fill counts once: a
// repeated update of the same fill moves nothing.
func TestLedgerMovesByEachFillOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	update := func(coid, filled, fee, feeAsset, status string) {
		t.Helper()
		_, err := pool.Exec(ctx, `UPDATE orders SET filled_quantity = $2::numeric, fee = NULLIF($3, '')::numeric,
			fee_asset = NULLIF($4, ''), status = $5 WHERE client_order_id = $1`, coid, filled, fee, feeAsset, status)
		require.NoError(t, err)
	}

	limit := spotOrder(t, pool, "buy", "BTC", "grid", "open", "0")
	require.Equal(t, "none", ledger(t, pool, "grid"), "nothing filled yet")
	update(limit, "0.4", "", "", "open")
	require.Equal(t, "0.4", ledger(t, pool, "grid"))
	update(limit, "1", "0.001", "BTC", "filled")
	require.Equal(t, "0.999", ledger(t, pool, "grid"), "the rest filled, less the commission taken in BTC")
	update(limit, "1", "0.001", "BTC", "filled")
	require.Equal(t, "0.999", ledger(t, pool, "grid"), "the same fill seen again counts nothing")

	spotOrder(t, pool, "buy", "BTC", "grid", "filled", "0.5")
	require.Equal(t, "1.499", ledger(t, pool, "grid"))
	sell := spotOrder(t, pool, "sell", "BTC", "grid", "filled", "1.2")
	require.Equal(t, "0.299", ledger(t, pool, "grid"))
	update(sell, "1.2", "12", "USDT", "filled")
	require.Equal(t, "0.299", ledger(t, pool, "grid"), "a fee in the quote asset does not touch the base holding")

	spotOrder(t, pool, "sell", "BTC", "grid", "filled", "5")
	require.Equal(t, "0", ledger(t, pool, "grid"), "a sell of more than was bought leaves nothing, never less")

	spotOrder(t, pool, "buy", "", "perp", "filled", "3")
	require.Equal(t, "none", ledger(t, pool, "perp"), "derivatives orders stay out of the spot ledger")
	spotOrder(t, pool, "buy", "BTC", "perp", "rejected", "0")
	require.Equal(t, "none", ledger(t, pool, "perp"), "a rejected order moved nothing")
}

// An operator may set an entry (after a manual trade, or to hand holdings
// bought before hoox to a strategy): the change is audited with what it
// replaced, and later fills move the entry from the new value.
func TestSetLedgerIsAuditedAndFillsMoveOnFromIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	spotOrder(t, pool, "buy", "BTC", "", "filled", "0.3")
	k := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: ""}

	e, err := db.SetLedger(ctx, pool, k, decimal.RequireFromString("1.5"), "bought by hand before hoox", "admin")
	require.NoError(t, err)
	require.Equal(t, "admin", e.UpdatedBy)
	require.Equal(t, "1.5", ledger(t, pool, ""))
	spotOrder(t, pool, "sell", "BTC", "", "filled", "0.5")
	require.Equal(t, "1", ledger(t, pool, ""))

	var was, now, reason, by string
	require.NoError(t, pool.QueryRow(ctx, `SELECT detail->>'was', detail->>'quantity', detail->>'reason', detail->>'by'
		FROM trace_history WHERE trace_id = $1 AND event = $2`, db.LedgerTraceID, db.EventLedgerSet).Scan(&was, &now, &reason, &by))
	require.Equal(t, []string{"0.3", "1.5", "bought by hand before hoox", "admin"}, []string{was, now, reason, by})

	held, err := db.LockLedger(ctx, pool, k)
	require.NoError(t, err)
	require.Equal(t, "1", held.Quantity.String())
	held, err = db.LockLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "test", Symbol: "BTCUSDT"})
	require.NoError(t, err)
	require.True(t, held.Quantity.IsZero(), "live and test books never mix")
}

// A split spot close sells in parts: until each part is recorded it may
// have sold, or is about to sell, the holding, so a close read meanwhile
// counts as sold the unsent parts an unrecorded intent planned and the
// parts (order_legs) not settled yet — never a settled one, whose fill
// the ledger already counts.
func TestUnrecordedSellsCountTheUnsettledPartsOfASplitClose(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	sell := func(qty string) string {
		return `{"Side":"sell","Quantity":"` + qty + `","Ledger":{"strategy":"trend","symbol":"BTCUSDT","base_asset":"BTC"}}`
	}
	// An intent whose answer was lost: 1 sent, 2 and 3 planned as parts.
	_, err := pool.Exec(ctx, `INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source,
		exchange, symbol, action, order_spec, signal, received_at, execution, outcome)
		VALUES ('hxlost', 'k:lost', 'k:lost', 'f', 'live', 'client', 'binance', 'BTCUSDT', 'close',
		        jsonb_set($1::jsonb, '{Legs}', jsonb_build_array(jsonb_build_object('Role', 'close_part', 'Order', $2::jsonb),
		                                                         jsonb_build_object('Role', 'close_part', 'Order', $3::jsonb))),
		        '{}', now(), 1, NULL)`, sell("1"), sell("2"), sell("3"))
	require.NoError(t, err)
	// A recorded close's parts: one still to place (4), one settled (5).
	for _, l := range []struct {
		id, qty string
		outcome any
	}{{"hxpart4", "4", nil}, {"hxpart5", "5", "dispatched"}} {
		_, err := pool.Exec(ctx, `INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key,
			exchange, mode, order_spec, outcome) VALUES ($1, 'hxdone', $2::int, 'close_part', 'k:done', 'k:done', 'binance', 'live', $3, $4)`,
			l.id, l.qty, sell(l.qty), l.outcome)
		require.NoError(t, err)
	}
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	held, err := db.LockLedger(ctx, tx, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"})
	require.NoError(t, err)
	require.Equal(t, "10", held.Unrecorded.String(), "1 + 2 + 3 of the lost close, 4 of the unsettled part")
}

// A spot sell recorded open (an OCO list or exit order resting, a limit
// sell) has yet to sell what it has not filled: the venue locks those
// coins, so a close of the same holding counts them as sold. Its fills,
// a settled sell, a buy and another strategy's sell do not count.
func TestUnrecordedSellsCountTheOpenSellsOfTheHolding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	spotOrder(t, pool, "buy", "BTC", "trend", "filled", "1")
	spotOrder(t, pool, "sell", "BTC", "trend", "open", "0.25")
	spotOrder(t, pool, "sell", "BTC", "trend", "cancelled", "0")
	spotOrder(t, pool, "buy", "BTC", "trend", "open", "0")
	spotOrder(t, pool, "sell", "BTC", "other", "open", "0")
	held, err := db.LockLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"})
	require.NoError(t, err)
	require.Equal(t, "0.75", held.Quantity.String(), "the open sell's fill of 0.25 is counted")
	require.Equal(t, "0.75", held.Unrecorded.String(), "the rest of the open sell (1 − 0.25)")
}

// A spot close's intent is written only while the entry's version is the
// one the close read under the ledger's lock, and bumps it in the same
// statement: a close whose lock was lost with its session, and which
// another close overtook, writes nothing. Either both move or neither:
// an intent refused by its own compare-and-set bumps nothing.
func TestSpotCloseIntentNeedsTheLedgerVersionItRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	spotOrder(t, pool, "buy", "BTC", "trend", "filled", "1")
	k := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"}
	version := func() int64 {
		t.Helper()
		held, err := db.LockLedger(ctx, pool, k)
		require.NoError(t, err)
		return held.Closes
	}
	intents := func() int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM dispatch_intents`).Scan(&n))
		return n
	}
	closeIntent := func(id string, closes int64) *db.Intent {
		return &db.Intent{ClientOrderID: id, LockKey: "k:" + id, TraceID: "k:" + id, Fingerprint: "fp", Mode: "live",
			KeySource: "client", Exchange: "binance", Signal: []byte(`{}`), ReceivedAt: time.Now(),
			Order: exchange.Order{ClientOrderID: id, Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
				Quantity: decimal.NewFromInt(1)},
			Ledger: &db.LedgerVersion{LedgerKey: k, Closes: closes}}
	}
	require.Zero(t, version())

	// Two closes read version 0; the first to write its intent wins.
	require.NoError(t, db.WriteIntent(ctx, pool, closeIntent("hxclose1", 0), true))
	require.Equal(t, int64(1), version())
	err := db.WriteIntent(ctx, pool, closeIntent("hxclose2", 0), true)
	require.ErrorIs(t, err, db.ErrIntentConsumed)
	require.Equal(t, 1, intents(), "the overtaken close wrote no intent")
	require.Equal(t, int64(1), version())

	// The version is right but the intent's own compare-and-set refuses
	// (hxclose1 was armed once, not never): nothing moves.
	err = db.WriteIntent(ctx, pool, closeIntent("hxclose1", 1), true)
	require.ErrorIs(t, err, db.ErrIntentConsumed)
	require.Equal(t, int64(1), version(), "no intent written, no version bumped")

	// A close of a strategy that never held any has no entry to bump.
	none := closeIntent("hxclose3", 0)
	none.Ledger.Strategy = "never"
	require.ErrorIs(t, db.WriteIntent(ctx, pool, none, true), db.ErrIntentConsumed)
	require.Equal(t, 1, intents())
}

// A sale recorded before the fill of the buy it sells (a limit buy filled
// at the venue while hoox still has it open) takes the entry below zero
// by at most what the strategy's open buys have yet to fill, so the buy's
// fill, recorded later, lands on what the strategy holds; readers see
// zero meanwhile. Without an open buy (coins bought by hand) a sell still
// stops at zero.
func TestSaleRecordedBeforeTheBuysFillIsNotLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	stored := func() string {
		t.Helper()
		var q decimal.Decimal
		require.NoError(t, pool.QueryRow(ctx, `SELECT quantity FROM spot_ledger WHERE strategy = 'dca'`).Scan(&q))
		return q.String()
	}
	limit := spotOrder(t, pool, "buy", "BTC", "dca", "open", "0")
	spotOrder(t, pool, "sell", "BTC", "dca", "filled", "1")
	require.Equal(t, "0", ledger(t, pool, "dca"), "nothing held while the buy's fill is not recorded")
	require.Equal(t, "-1", stored(), "the sale waits for the open buy's fill")
	spotOrder(t, pool, "sell", "BTC", "dca", "filled", "2")
	require.Equal(t, "-1", stored(), "never below what the open buy may bring")
	held, err := db.LockLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "dca"})
	require.NoError(t, err)
	require.True(t, held.Quantity.IsZero(), "a close reads nothing held")

	_, err = pool.Exec(ctx, `UPDATE orders SET filled_quantity = 1, status = 'filled' WHERE client_order_id = $1`, limit)
	require.NoError(t, err)
	require.Equal(t, "0", stored(), "bought 1, sold 1: nothing held")
	spotOrder(t, pool, "sell", "BTC", "dca", "filled", "1")
	require.Equal(t, "0", stored(), "coins bought by hand leave no debt")
	spotOrder(t, pool, "buy", "BTC", "dca", "filled", "0.5")
	require.Equal(t, "0.5", ledger(t, pool, "dca"))
}

// An operator's change to a ledger entry moves its version: a close that
// read the entry before the change (and sized by it) writes no intent, so
// it never sells by the old value; its resend reads the new one.
func TestLedgerSetStopsACloseSizedByTheOldValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.OpenPool(t, pgtest.NewDatabase(t))
	spotOrder(t, pool, "buy", "BTC", "trend", "filled", "1")
	k := db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "trend"}
	read, err := db.LockLedger(ctx, pool, k)
	require.NoError(t, err)

	_, err = db.SetLedger(ctx, pool, k, decimal.Zero, "sold by hand", "admin")
	require.NoError(t, err)

	in := &db.Intent{ClientOrderID: "hxclose-old", LockKey: "k:hxclose-old", TraceID: "k:hxclose-old", Fingerprint: "fp", Mode: "live",
		KeySource: "client", Exchange: "binance", Signal: []byte(`{}`), ReceivedAt: time.Now(),
		Order: exchange.Order{ClientOrderID: "hxclose-old", Symbol: "BTCUSDT", Action: "close", Side: "sell", OrderType: "market",
			Quantity: decimal.NewFromInt(1)},
		Ledger: &db.LedgerVersion{LedgerKey: k, Closes: read.Closes}}
	require.ErrorIs(t, db.WriteIntent(ctx, pool, in, true), db.ErrIntentConsumed, "sized by the entry before the operator's change")
	now, err := db.LockLedger(ctx, pool, k)
	require.NoError(t, err)
	require.True(t, now.Quantity.IsZero())
	in.Ledger.Closes = now.Closes
	require.NoError(t, db.WriteIntent(ctx, pool, in, true), "a close that read the new value writes its intent")
}
