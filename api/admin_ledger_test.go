package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// Operators see what each strategy holds through hoox and can set or
// reset an entry; a bad body is refused and changes nothing, and every
// change is in the audit trail with what it replaced.
func TestAdminLedger(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	page := b.do(t, http.MethodGet, "/admin/ledger", "").json(t)
	require.Empty(t, page["entries"])

	for _, bad := range []string{
		``, `{}`, `not json`,
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "quantity": "1"}`,                                     // no strategy
		`{"exchange": "binance", "mode": "paper", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`,                    // bad mode
		`{"exchange": "", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`,                            // no exchange
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "-1"}`,                    // negative
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1e3"}`,                   // not plain
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "abc"}`,                   // not a number
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "0.0000000000000000001"}`, // 19 decimals
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "123456789012345678901"}`, // 21 digits
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1", "qty": "2"}`,         // unknown field
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "` + strings.Repeat("s", 300) + `", "quantity": "1"}`,
	} {
		res := b.do(t, http.MethodPut, "/admin/ledger", bad)
		require.Equal(t, http.StatusBadRequest, res.Status, bad)
		require.Equal(t, "invalid_request", res.problem(t)["code"], bad)
	}
	require.Empty(t, b.do(t, http.MethodGet, "/admin/ledger", "").json(t)["entries"], "a bad body changes nothing")

	res := b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange": "binance", "mode": "live", "symbol": "btcusdt", "strategy": "trend", "quantity": "0.5", "reason": "bought by hand"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	entry := res.json(t)
	require.Equal(t, "BTCUSDT", entry["symbol"])
	require.Equal(t, "0.5", entry["quantity"])
	require.Equal(t, "admin", entry["updated_by"])
	res = b.do(t, http.MethodPut, "/admin/ledger", `{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": 2.25}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))

	entries := b.do(t, http.MethodGet, "/admin/ledger?strategy=trend", "").json(t)["entries"].([]any)
	require.Len(t, entries, 1)
	require.Equal(t, "0.5", entries[0].(map[string]any)["quantity"])
	entries = b.do(t, http.MethodGet, "/admin/ledger?strategy=", "").json(t)["entries"].([]any)
	require.Len(t, entries, 1, "strategy= selects signals without one")
	require.Equal(t, "2.25", entries[0].(map[string]any)["quantity"])
	require.Len(t, b.do(t, http.MethodGet, "/admin/ledger?exchange=binance&mode=live&symbol=btcusdt", "").json(t)["entries"], 2)
	res = b.do(t, http.MethodGet, "/admin/ledger?strategi=trend", "")
	require.Equal(t, http.StatusBadRequest, res.Status, "a misspelt filter is refused, never read as no filter")

	res = b.do(t, http.MethodPut, "/admin/ledger", `{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "trend", "quantity": "0", "reason": "reset"}`)
	require.Equal(t, http.StatusOK, res.Status)
	detail := b.do(t, http.MethodGet, "/admin/traces/"+db.LedgerTraceID, "").json(t)
	var trail []string
	for _, e := range detail["events"].([]any) {
		ev := e.(map[string]any)
		d := ev["detail"].(map[string]any)
		trail = append(trail, ev["event"].(string)+" "+d["strategy"].(string)+" "+d["was"].(string)+"->"+d["quantity"].(string))
	}
	require.Equal(t, []string{"ledger_set trend 0->0.5", "ledger_set  0->2.25", "ledger_set trend 0.5->0"}, trail)
}

// PUT /admin/ledger stores the exchange as signals do, lower-case: the
// spot close reads the entry under the signal's exchange, so an entry set
// for "PAPER" must be the one signals on paper read.
func TestLedgerExchangeIsStoredAsSignalsNameIt(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	r := b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange":"PAPER","mode":"live","symbol":"btcusdt","strategy":"","quantity":"2","reason":"manual buy"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, "paper", r.json(t)["exchange"])
	require.Equal(t, "BTCUSDT", r.json(t)["symbol"])
	for _, q := range []string{"exchange=paper", "exchange=Paper"} {
		got := b.do(t, http.MethodGet, "/admin/ledger?"+q+"&mode=live&symbol=BTCUSDT", "")
		require.Equal(t, http.StatusOK, got.Status, string(got.Body))
		entries, _ := got.json(t)["entries"].([]any)
		require.Len(t, entries, 1, "%s: the entry set for PAPER is not the one signals on paper read: %s", q, got.Body)
	}
	// A name no signal can carry names no entry a signal could read.
	for _, body := range []string{
		`{"exchange":"pa per","mode":"live","symbol":"BTCUSDT","strategy":"","quantity":"1"}`,
		`{"exchange":"` + strings.Repeat("p", 33) + `","mode":"live","symbol":"BTCUSDT","strategy":"","quantity":"1"}`,
		`{"exchange":"paper","mode":"live","symbol":"BTC USDT","strategy":"","quantity":"1"}`,
	} {
		r := b.do(t, http.MethodPut, "/admin/ledger", body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", body, r.Body)
	}
}

// A strategy is "at most 256 characters" without control characters in a
// signal (signal.CheckText counts characters), so the ledger takes the
// same: a 200-letter non-ASCII strategy a signal may carry can be
// corrected, and a control character no signal may carry is refused.
func TestLedgerStrategyFollowsTheSignalRule(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	long := strings.Repeat("é", 200) // 200 characters, 400 bytes: a valid signal strategy
	r := b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange":"paper","mode":"live","symbol":"BTCUSDT","strategy":"`+long+`","quantity":"1"}`)
	assert.Equal(t, http.StatusOK, r.Status, "a strategy a signal may carry: %s", r.Body)
	for _, strategy := range []string{`\u001b[2J`, `a\nb`, strings.Repeat("é", 257)} {
		r = b.do(t, http.MethodPut, "/admin/ledger",
			`{"exchange":"paper","mode":"live","symbol":"BTCUSDT","strategy":"`+strategy+`","quantity":"1"}`)
		assert.Equal(t, http.StatusBadRequest, r.Status, "a strategy no signal may carry: %s", r.Body)
	}
}

// PUT /admin/ledger answers which reservations it ended: the entry's
// spot sells that had ended failed with their order unknown, which no
// longer count as sold in the strategy's closes.
func TestLedgerSetAnswersTheSellsItReleased(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	_, err := b.pool.Exec(context.Background(), `INSERT INTO dispatch_intents (client_order_id, lock_key, trace_id, fingerprint, mode,
		key_source, exchange, symbol, action, order_spec, signal, received_at, execution, outcome)
		VALUES ('hxmissed', 'k:missed', 'k:missed', 'f', 'live', 'client', 'binance', 'BTCUSDT', 'close',
		        '{"Side":"sell","Quantity":"0.5","Ledger":{"strategy":"trend","symbol":"BTCUSDT","base_asset":"BTC"}}', '{}', now(), 1, 'failed')`)
	require.NoError(t, err)

	res := b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "trend", "quantity": "0.5", "reason": "the missed close is not at binance"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.Equal(t, []any{map[string]any{"trace_id": "k:missed", "client_order_id": "hxmissed", "role": "primary", "quantity": "0.5"}},
		res.json(t)["released_sells"])
	res = b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "trend", "quantity": "0.5"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	require.NotContains(t, res.json(t), "released_sells", "nothing left to release")
}

// A ledger set may name the value it replaces ("was", as GET showed it).
// If a fill moved the entry since — the operator's PUT retried after a
// lost answer, or sent from an old listing — the set is refused (409
// ledger_changed) and the fill's move stands: set anyway, the close
// would sell what the strategy no longer holds, or leave what it bought.
func TestLedgerSetNamingAValueSinceMovedIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	const key = `"exchange": "binance", "mode": "live", "symbol": "BTCUSDT", "strategy": "ema"`
	res := b.do(t, http.MethodPut, "/admin/ledger", `{`+key+`, "quantity": "1", "was": "0"}`)
	require.Equal(t, http.StatusOK, res.Status, "an absent entry holds 0: %s", res.Body)

	// A buy fills meanwhile.
	_, err := b.pool.Exec(context.Background(), `UPDATE spot_ledger SET quantity = 1.5 WHERE strategy = 'ema'`)
	require.NoError(t, err)

	res = b.do(t, http.MethodPut, "/admin/ledger", `{`+key+`, "quantity": "0.8", "was": "1", "reason": "sold by hand"}`)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	p := res.problem(t)
	require.Equal(t, "ledger_changed", p["code"])
	require.Contains(t, p["detail"], "1.5")
	entries := b.do(t, http.MethodGet, "/admin/ledger?strategy=ema", "").json(t)["entries"].([]any)
	require.Equal(t, "1.5", entries[0].(map[string]any)["quantity"], "the fill's move stands")

	res = b.do(t, http.MethodPut, "/admin/ledger", `{`+key+`, "quantity": "0.8", "was": "1.50"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	res = b.do(t, http.MethodPut, "/admin/ledger", `{`+key+`, "quantity": "0.8", "was": "-1"}`)
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
}

// review-admin, noticed and left: PUT /admin/ledger took an exchange no
// venue or account is configured for ("binanse": 200), an entry nothing
// reads while the operator believes the strategy's holdings are set. It
// is refused with 400 naming the configured names, and nothing is set;
// an exchange that already has entries (an account since removed from
// the configuration) stays settable, so its entries can be corrected or
// reset.
func TestLedgerSetOfAnExchangeNothingIsConfiguredForIsRefused(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)

	res := b.do(t, http.MethodPut, "/admin/ledger",
		`{"exchange": "binanse", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`)
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	p := res.problem(t)
	require.Equal(t, "invalid_request", p["code"])
	require.Contains(t, p["detail"], "binanse")
	require.Contains(t, p["detail"], "binance, paper", "the configured names")
	var n int
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM spot_ledger`).Scan(&n))
	require.Zero(t, n, "nothing set")
	require.NoError(t, b.pool.QueryRow(context.Background(), `SELECT count(*) FROM trace_events WHERE trace_id = $1`, db.LedgerTraceID).Scan(&n))
	require.Zero(t, n, "nothing audited as set")

	// A configured name is set, as is one that already has entries.
	res = b.do(t, http.MethodPut, "/admin/ledger", `{"exchange": "paper", "mode": "live", "symbol": "BTCUSDT", "strategy": "", "quantity": "1"}`)
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	_, err := b.pool.Exec(context.Background(), `INSERT INTO spot_ledger (exchange, mode, symbol, strategy, quantity, updated_by)
		VALUES ('old-sub', 'live', 'ETHUSDT', 'dca', 2, 'fill')`)
	require.NoError(t, err)
	res = b.do(t, http.MethodPut, "/admin/ledger", `{"exchange": "old-sub", "mode": "live", "symbol": "ETHUSDT", "strategy": "dca", "quantity": "0", "reason": "account removed"}`)
	require.Equal(t, http.StatusOK, res.Status, "a removed account's entry stays settable: %s", res.Body)
}
