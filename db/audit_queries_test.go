package db_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
)

// auditQuery is one documented query of docs/audit.sql.
type auditQuery struct {
	Name string
	SQL  string
}

// readAuditQueries splits docs/audit.sql at its "-- name: <title>" lines.
// Comments before the first name are the file's preamble.
func readAuditQueries(t *testing.T) []auditQuery {
	t.Helper()
	f, err := os.Open("../docs/audit.sql")
	require.NoError(t, err)
	defer f.Close()
	var out []auditQuery
	var cur *auditQuery
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "-- name:"); ok {
			out = append(out, auditQuery{Name: strings.TrimSpace(name)})
			cur = &out[len(out)-1]
			continue
		}
		if cur != nil {
			cur.SQL += line + "\n"
		}
	}
	require.NoError(t, sc.Err())
	for i := range out {
		out[i].SQL = strings.TrimSuffix(strings.TrimSpace(out[i].SQL), ";")
		require.NotEmpty(t, out[i].SQL, "query %q has no SQL", out[i].Name)
		require.NotContains(t, out[i].SQL, ";", "query %q holds more than one statement", out[i].Name)
	}
	return out
}

// TestAuditQueriesRunAndFindTheIncidents runs every query in docs/audit.sql
// against a database seeded with one incident of each kind, and checks each
// query finds the incident it is documented for. A query added to the file
// without an expectation here fails the test, so the docs cannot rot.
func TestAuditQueriesRunAndFindTheIncidents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now()

	// k:demo-1: executed once, then repeated by the sender.
	insertTrace(t, pool, seedTrace{ID: "k:demo-1", ReceivedAt: now.Add(-10 * time.Minute)})
	insertOrder(t, pool, seedOrder{TraceID: "k:demo-1", CreatedAt: now.Add(-10 * time.Minute)})
	insertEvent(t, pool, "k:demo-1", "received", now.Add(-10*time.Minute), nil)
	insertEvent(t, pool, "k:demo-1", "dispatch_started", now.Add(-10*time.Minute+time.Millisecond), nil)
	insertEvent(t, pool, "k:demo-1", "dispatched", now.Add(-10*time.Minute+2*time.Millisecond), nil)
	insertEvent(t, pool, "k:demo-1", "duplicate", now.Add(-5*time.Minute), map[string]any{"fingerprint": "fp-k:demo-1"})

	// k:reused: the same client key sent with a different signal.
	insertTrace(t, pool, seedTrace{ID: "k:reused", ReceivedAt: now.Add(-20 * time.Minute)})
	insertEvent(t, pool, "k:reused", "received", now.Add(-20*time.Minute), nil)
	insertEvent(t, pool, "k:reused", "key_reused", now.Add(-15*time.Minute), map[string]any{"fingerprint": "other-fp"})

	// d:twice: executed, purged at expiry, executed again.
	insertTrace(t, pool, seedTrace{ID: "d:twice", ReceivedAt: now.Add(-time.Minute)})
	insertOrder(t, pool, seedOrder{TraceID: "d:twice", Symbol: "ETHUSDT", CreatedAt: now.Add(-26 * time.Hour)})
	insertOrder(t, pool, seedOrder{TraceID: "d:twice", Symbol: "ETHUSDT", CreatedAt: now.Add(-time.Minute)})
	insertEvent(t, pool, "d:twice", "received", now.Add(-26*time.Hour), nil)
	insertEvent(t, pool, "d:twice", "dispatched", now.Add(-26*time.Hour), nil)
	insertEvent(t, pool, "d:twice", "purged", now.Add(-2*time.Hour), nil)
	insertEvent(t, pool, "d:twice", "received", now.Add(-time.Minute), nil)
	insertEvent(t, pool, "d:twice", "dispatched", now.Add(-time.Minute), nil)

	// k:split: a close split in three; the last part was sent and not
	// recorded yet. Its primary and first part are two orders of one
	// trace, not an execution again.
	insertTrace(t, pool, seedTrace{ID: "k:split", Symbol: "ETHUSDT"})
	insertOrder(t, pool, seedOrder{TraceID: "k:split", Symbol: "XRPUSDT", ClientOrderID: "hxsplitprimary"})
	insertOrder(t, pool, seedOrder{TraceID: "k:split", Symbol: "XRPUSDT", ClientOrderID: "hxsplitpart1", Role: exchange.RoleClosePart})
	_, errLegs := pool.Exec(ctx, `
INSERT INTO order_legs (client_order_id, parent_client_order_id, seq, role, trace_id, lock_key, exchange, mode, order_spec, sent_at, outcome)
VALUES ('hxsplitpart1', 'hxsplitprimary', 1, 'close_part', 'k:split', 'k:split', 'binance-futures', 'live', '{}', now(), 'dispatched'),
       ('hxsplitpart2', 'hxsplitprimary', 2, 'close_part', 'k:split', 'k:split', 'binance-futures', 'live', '{}', now(), NULL)`)
	require.NoError(t, errLegs)

	// k:stuck: the venue's answer was lost an hour ago.
	insertTrace(t, pool, seedTrace{ID: "k:stuck", Status: db.TraceReconciling, Symbol: "SOLUSDT", ReceivedAt: now.Add(-time.Hour)})

	// k:dead: an attempt sent its order and died before recording it.
	_, err0 := pool.Exec(ctx, `
INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode, key_source, exchange, symbol,
                              action, order_spec, signal, received_at, sent_at, execution)
VALUES ('hxdead', 'k:dead', 'k:dead', 'fp', 'live', 'client', 'binance', 'BTCUSDT', 'buy',
        '{"Quantity":"0.5"}', '{}', now() - interval '10 minutes', now() - interval '10 minutes', 0)`)
	require.NoError(t, err0)

	// k:refused: the venue rejected the order.
	insertTrace(t, pool, seedTrace{ID: "k:refused", Status: db.TraceRejected, Symbol: "DOGEUSDT"})
	insertOrder(t, pool, seedOrder{TraceID: "k:refused", Symbol: "DOGEUSDT", Status: "rejected", RejectReason: "insufficient balance"})

	// k:sized: 50 % of a 1000 USDT balance at 60000, rounded down.
	insertTrace(t, pool, seedTrace{ID: "k:sized"})
	insertEvent(t, pool, "k:sized", "dispatched", now.Add(-3*time.Minute), map[string]any{"sizing": map[string]any{
		"type": "percent_of_balance", "asked": "50", "price": "60000", "quote_asset": "USDT", "free_quote": "1000",
		"step": "0.001", "unrounded": "0.008333333333333333", "quantity": "0.008"}})

	// k:capped: an entry refused before it was sent, its stop-loss past
	// the symbol's algo cap; k:room: one whose exits fitted.
	insertTrace(t, pool, seedTrace{ID: "k:capped"})
	insertEvent(t, pool, "k:capped", "rejected", now.Add(-2*time.Minute), map[string]any{"reason": "MAX_NUM_ALGO_ORDERS allows 10", "sent": false,
		"exit_caps": []any{map[string]any{"filter": "MAX_NUM_ALGO_ORDERS", "counted": "stop/take-profit orders", "symbol": "BTCUSDT", "limit": 10, "open": 10, "adds": 1}}})
	insertTrace(t, pool, seedTrace{ID: "k:room"})
	insertEvent(t, pool, "k:room", "dispatched", now.Add(-4*time.Minute), map[string]any{
		"exit_caps": []any{map[string]any{"filter": "MAX_NUM_ALGO_ORDERS", "counted": "stop/take-profit orders", "symbol": "BTCUSDT", "limit": 10, "open": 8, "adds": 2}}})

	// k:protected: an entry that filled with a take-profit and a stop-loss.
	insertTrace(t, pool, seedTrace{ID: "k:protected"})
	protected := insertOrder(t, pool, seedOrder{TraceID: "k:protected", Symbol: "XRPUSDT"})
	_, err1 := pool.Exec(ctx, `UPDATE orders SET take_profit = 0.66, stop_loss = 0.5 WHERE id = $1`, protected)
	require.NoError(t, err1)
	// …and a trailing stop placed as its own order (Binance USDⓈ-M).
	trailing := insertOrder(t, pool, seedOrder{TraceID: "k:protected", Symbol: "XRPUSDT", ClientOrderID: "hxprotectedts", Role: exchange.RoleTrailingStop})
	_, errTS := pool.Exec(ctx, `UPDATE orders SET callback_rate = 1.5, status = 'open' WHERE id = $1`, trailing)
	require.NoError(t, errTS)
	// …and a Bybit trailing stop (a distance) gone with its position.
	bybitTS := insertOrder(t, pool, seedOrder{TraceID: "k:protected", Symbol: "XRPUSDT", ClientOrderID: "hxprotectedbybit", Role: exchange.RoleTrailingStop})
	_, errBTS := pool.Exec(ctx, `UPDATE orders SET trailing_distance = 0.0125, status = 'expired' WHERE id = $1`, bybitTS)
	require.NoError(t, errBTS)
	// …and a spot OCO list whose stop-loss executed (followed to its end).
	oco := insertOrder(t, pool, seedOrder{TraceID: "k:protected", Symbol: "XRPUSDT", ClientOrderID: "hxprotectedoco", Role: exchange.RoleOCO})
	_, errOCO := pool.Exec(ctx, `UPDATE orders SET take_profit = 0.7, stop_loss = 0.45, executed_exit = 'stop_loss', final_at = now() WHERE id = $1`, oco)
	require.NoError(t, errOCO)

	// k:demo-fan: one signal on the default binance account and on the
	// named account sub1; k:demo-fan-other is another signal.
	insertTrace(t, pool, seedTrace{ID: "k:demo-fan", Exchange: "binance"})
	insertOrder(t, pool, seedOrder{TraceID: "k:demo-fan", Exchange: "binance", Symbol: "ADAUSDT"})
	insertTrace(t, pool, seedTrace{ID: "@sub1:k:demo-fan", Exchange: "sub1"})
	insertOrder(t, pool, seedOrder{TraceID: "@sub1:k:demo-fan", Exchange: "sub1", Symbol: "ADAUSDT"})
	insertOrder(t, pool, seedOrder{TraceID: "@sub1:k:demo-fan-other", Exchange: "sub1", Symbol: "ADAUSDT", Status: "open"})
	insertTrace(t, pool, seedTrace{ID: "@sub1:k:demo-fan-other", Exchange: "sub1"})
	// The spot ledger: strategy "trend" bought 0.010 BTC (0.00001 taken in
	// BTC) and sold 0.009, last month (so the week's order counts above
	// stay the accounts' own); an operator handed 1 BTC bought by hand to
	// strategy "manual".
	for i, o := range []struct{ id, side, filled, fee, feeAsset string }{
		{"hxspotbuy", "buy", "0.010", "0.00001", "BTC"}, {"hxspotsell", "sell", "0.009", "0.05", "USDT"},
	} {
		_, err := pool.Exec(ctx, `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
			quantity, mode, status, filled_quantity, fee, fee_asset, strategy, base_asset, created_at)
			VALUES (gen_random_uuid(), 'k:'||$1, $1, 'binance', 'BTCUSDT', $2::text, $2, 'market', $3::numeric, 'live', 'filled',
			        $3::numeric, $4::numeric, $5, 'trend', 'BTC', now() - interval '30 days' + $6::int * interval '1 second')`,
			o.id, o.side, o.filled, o.fee, o.feeAsset, i)
		require.NoError(t, err)
	}
	_, err1 = db.SetLedger(ctx, pool, db.LedgerKey{Exchange: "binance", Mode: "live", Symbol: "BTCUSDT", Strategy: "manual"},
		decimal.RequireFromString("1"), "bought by hand before hoox", "admin")
	require.NoError(t, err1)

	// k:rested: a limit order that filled in part, then was cancelled.
	insertTrace(t, pool, seedTrace{ID: "k:rested"})
	insertOrder(t, pool, seedOrder{TraceID: "k:rested", ClientOrderID: "hxrested", OrderType: "limit", Price: "90",
		Quantity: "2", Status: "open"})
	changed, err := db.ApplyOrderUpdate(ctx, pool, "hxrested", db.OrderUpdate{Status: "cancelled",
		FilledQuantity: decimal.RequireFromString("0.5"), AvgPrice: decimal.NewNullDecimal(decimal.RequireFromString("89.5")),
		Fee: decimal.NewNullDecimal(decimal.RequireFromString("0.0005")), FeeAsset: "BTC", CancelledBy: "k:cancel"}, nil)
	require.NoError(t, err)
	require.True(t, changed)

	// Operator actions, through the code the admin API runs.
	insertTrace(t, pool, seedTrace{ID: "k:freed"})
	_, err = db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:freed", By: "admin", Reason: "resend"})
	require.NoError(t, err)
	_, err = db.SetKillSwitch(ctx, pool, true, "venue incident", "admin")
	require.NoError(t, err)

	// has reports whether a row has col equal to want (compared as text).
	type row = map[string]any
	has := func(rows []row, col string, want any) bool {
		for _, r := range rows {
			if str(r[col]) == str(want) {
				return true
			}
		}
		return false
	}
	expect := map[string]func(t *testing.T, rows []row){
		"Duplicates per day": func(t *testing.T, rows []row) {
			require.True(t, has(rows, "duplicates", 1), "today's duplicate: %v", rows)
			require.True(t, has(rows, "key_reuses", 1), "today's key reuse: %v", rows)
		},
		"Every attempt of one trace, in time order": func(t *testing.T, rows []row) {
			var events []string
			for _, r := range rows {
				events = append(events, str(r["event"]))
			}
			require.Equal(t, []string{"received", "dispatch_started", "dispatched", "duplicate"}, events)
		},
		"Key reuse incidents (same client key, different signal)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "k:reused", rows[0]["trace_id"])
			require.Equal(t, "other-fp", rows[0]["reused_with_fingerprint"])
			require.Equal(t, "fp-k:reused", rows[0]["original_fingerprint"])
		},
		"Orders per symbol and outcome": func(t *testing.T, rows []row) {
			require.True(t, has(rows, "symbol", "DOGEUSDT"))
			for _, r := range rows {
				if r["symbol"] == "DOGEUSDT" {
					require.Equal(t, "rejected", r["status"])
				}
				if r["symbol"] == "ETHUSDT" {
					require.EqualValues(t, 2, r["orders"], "both executions of d:twice")
				}
			}
		},
		"Signals that executed again after their TTL or a release": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "d:twice", rows[0]["trace_id"])
			require.EqualValues(t, 2, rows[0]["executions"])
			require.EqualValues(t, 2, rows[0]["dispatched_events"])
			require.Len(t, rows[0]["executed_at"], 2)
			require.Len(t, rows[0]["freed_by"], 1)
			require.Contains(t, str(rows[0]["freed_by"]), "purged")
		},
		"Signals that placed several orders (split closes)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 2)
			require.Equal(t, "hxsplitpart1", rows[0]["client_order_id"])
			require.Equal(t, "dispatched", rows[0]["leg_state"])
			require.Equal(t, "filled", rows[0]["status"])
			require.Equal(t, "hxsplitpart2", rows[1]["client_order_id"])
			require.Equal(t, "sent, not yet recorded", rows[1]["leg_state"])
			require.Nil(t, rows[1]["status"], "no order recorded yet")
		},
		"Kill switch history": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "kill_switch_engaged", rows[0]["event"])
			require.Equal(t, "venue incident", rows[0]["reason"])
		},
		"Stuck reconciling traces (venue answer lost, not yet resolved)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "k:stuck", rows[0]["trace_id"])
		},
		"Keys released by an operator": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "k:freed", rows[0]["trace_id"])
			require.Equal(t, "resend", rows[0]["reason"])
		},
		"Orders sent but not yet recorded (an attempt died mid-order)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "hxdead", rows[0]["client_order_id"])
			require.Equal(t, "0.5", rows[0]["quantity"])
		},
		"Why an order got its size (quantity_type other than base)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "k:sized", rows[0]["trace_id"])
			require.Equal(t, "1000", rows[0]["free_quote"])
			require.Equal(t, "0.008", rows[0]["sent"])
		},
		"Orders with their attached exits (take-profit, stop-loss, trailing stop)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 4, "the entry with its exits, its two trailing stops and its OCO list")
			byID := map[string]any{}
			for _, r := range rows {
				require.Equal(t, "k:protected", r["trace_id"])
				byID[str(r["client_order_id"])] = r["attached"]
			}
			require.Equal(t, []any{
				map[string]any{"role": "trailing_stop", "callback_rate": "1.5", "status": "placed"},
			}, byID["hxprotectedts"])
			delete(byID, "hxprotectedts")
			require.Equal(t, []any{
				map[string]any{"role": "trailing_stop", "trailing_distance": "0.0125", "status": "ended"},
			}, byID["hxprotectedbybit"])
			delete(byID, "hxprotectedbybit")
			require.Equal(t, []any{
				map[string]any{"role": "take_profit", "trigger_price": "0.7", "status": "cancelled"},
				map[string]any{"role": "stop_loss", "trigger_price": "0.45", "status": "filled"},
			}, byID["hxprotectedoco"], "the executed exit filled, the other cancelled")
			delete(byID, "hxprotectedoco")
			require.Len(t, byID, 1)
			for _, attached := range byID {
				require.Equal(t, []any{
					map[string]any{"role": "take_profit", "trigger_price": "0.66", "status": "placed"},
					map[string]any{"role": "stop_loss", "trigger_price": "0.5", "status": "placed"},
				}, attached)
			}
		},
		"Orders per account and outcome": func(t *testing.T, rows []row) {
			orders := map[string]string{}
			for _, r := range rows {
				orders[str(r["account"])+"/"+str(r["status"])] = str(r["orders"])
			}
			require.Equal(t, "1", orders["binance/filled"], "%v", rows)
			require.Equal(t, "1", orders["sub1/filled"], "%v", rows)
			require.Equal(t, "1", orders["sub1/open"], "%v", rows)
		},
		"One fan-out on every account": func(t *testing.T, rows []row) {
			require.Len(t, rows, 2, "the signal's two traces, not the other signal's")
			require.Equal(t, "binance", rows[0]["account"])
			require.Equal(t, "k:demo-fan", rows[0]["trace_id"])
			require.Equal(t, "sub1", rows[1]["account"])
			require.Equal(t, "@sub1:k:demo-fan", rows[1]["trace_id"])
		},
		"What each strategy holds on spot (the spot ledger)": func(t *testing.T, rows []row) {
			require.Len(t, rows, 2)
			require.Equal(t, "manual", rows[0]["strategy"])
			require.Equal(t, "1", str(rows[0]["quantity"]))
			require.Equal(t, "0", str(rows[0]["from_fills"]), "set by an operator, not by fills")
			require.Equal(t, "trend", rows[1]["strategy"])
			require.Equal(t, "0.00099", str(rows[1]["quantity"]))
			require.Equal(t, "0.00099", str(rows[1]["from_fills"]))
		},
		"Spot fills of one strategy, as the ledger counted them": func(t *testing.T, rows []row) {
			require.Len(t, rows, 2)
			require.Equal(t, "0.00999", str(rows[0]["moved"]), "the buy, less its fee in BTC")
			require.Equal(t, "-0.009", str(rows[1]["moved"]), "the sell; its fee was in USDT")
		},
		"Operator changes to the spot ledger": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "manual", rows[0]["strategy"])
			require.Equal(t, "0", rows[0]["was"])
			require.Equal(t, "1", rows[0]["set_to"])
			require.Equal(t, "bought by hand before hoox", rows[0]["reason"])
		},
		"Fills and fees of orders followed to their end": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "hxrested", rows[0]["client_order_id"])
			require.Equal(t, "cancelled", rows[0]["status"])
			require.True(t, numeric(t, rows[0]["filled_quantity"]).Equal(decimal.RequireFromString("0.5")))
			require.True(t, numeric(t, rows[0]["fee"]).Equal(decimal.RequireFromString("0.0005")))
			require.Equal(t, "BTC", rows[0]["fee_asset"])
			require.Equal(t, "k:cancel", rows[0]["cancelled_by"])
		},
		"Entries checked against a venue's cap on resting exits": func(t *testing.T, rows []row) {
			require.Len(t, rows, 2)
			require.Equal(t, "k:capped", rows[0]["trace_id"])
			require.Equal(t, false, rows[0]["sent"])
			require.EqualValues(t, 10, rows[0]["open"])
			require.Equal(t, "k:room", rows[1]["trace_id"])
			require.Equal(t, true, rows[1]["sent"])
			require.EqualValues(t, 2, rows[1]["adds"])
		},
		"Rejected orders by reason": func(t *testing.T, rows []row) {
			require.Len(t, rows, 1)
			require.Equal(t, "insufficient balance", rows[0]["reject_reason"])
		},
	}

	queries := readAuditQueries(t)
	require.GreaterOrEqual(t, len(queries), 5)
	seen := map[string]bool{}
	for _, q := range queries {
		require.False(t, seen[q.Name], "query name %q is used twice", q.Name)
		seen[q.Name] = true
		check, ok := expect[q.Name]
		require.True(t, ok, "docs/audit.sql query %q has no expectation in this test", q.Name)
		rows, err := pool.Query(ctx, q.SQL)
		require.NoError(t, err, q.Name)
		got, err := pgx.CollectRows(rows, pgx.RowToMap)
		require.NoError(t, err, q.Name)
		t.Run(q.Name, func(t *testing.T) { check(t, got) })
	}
	for name := range expect {
		require.True(t, seen[name], "expected query %q is missing from docs/audit.sql", name)
	}
}

// numeric reads a numeric column as a decimal.
func numeric(t *testing.T, v any) decimal.Decimal {
	t.Helper()
	n, ok := v.(pgtype.Numeric)
	require.True(t, ok, "%T is not numeric", v)
	text, err := n.Value()
	require.NoError(t, err)
	return decimal.RequireFromString(text.(string))
}

// str renders a column value as text for loose comparisons (a numeric as
// its exact decimal).
func str(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case pgtype.Numeric:
		return decimal.NewFromBigInt(x.Int, x.Exp).String()
	default:
		return fmt.Sprint(x)
	}
}

// TestREADMEHoldsEveryAuditQuery keeps the README's audit section and
// docs/audit.sql the same, so the queries operators copy are the tested ones.
func TestREADMEHoldsEveryAuditQuery(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	queries := readAuditQueries(t)
	require.GreaterOrEqual(t, len(queries), 5)
	for _, q := range queries {
		require.Contains(t, string(readme), "### "+q.Name, "README lacks the heading of %q", q.Name)
		require.Contains(t, string(readme), q.SQL, "README lacks the SQL of %q", q.Name)
	}
}
