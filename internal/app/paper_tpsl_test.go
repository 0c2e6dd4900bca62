package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/apptest"
)

// attachedOf reads a reply's "attached" list as role → [trigger_price,
// status].
func attachedOf(t *testing.T, body map[string]any) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	list, _ := body["attached"].([]any)
	for _, item := range list {
		m := item.(map[string]any)
		out[m["role"].(string)] = [2]string{m["trigger_price"].(string), m["status"].(string)}
	}
	return out
}

// An entry with a take-profit and a stop-loss on paper, through /webhook:
// the answer shows them beside the order, the order row and paper's book
// hold them, the admin trace API shows the same list, and a resend is a
// 409 that places nothing more.
func TestPaperEntryWithTakeProfitAndStopLoss(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	body := func(members string) string {
		return fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"TPSLUSDT",%s}`, apptest.Secret, members)
	}

	sig := body(`"action":"buy","quantity":"1","price":"100","order_type":"market","take_profit":"110","stop_loss":{"price":"95"},"trace_id":"tp-1"`)
	r := apptest.Post(t, b.URL, sig)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, map[string][2]string{"take_profit": {"110", "placed"}, "stop_loss": {"95", "placed"}}, attachedOf(t, r.Body))
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:tp-1' AND take_profit = 110 AND stop_loss = 95`))
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM paper_orders WHERE take_profit = 110 AND stop_loss = 95`))

	req, err := http.NewRequest(http.MethodGet, b.URL+"/admin/traces/k:tp-1", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+apptest.AdminToken)
	resp, err := apptest.Client.Do(req)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var trace struct {
		Orders []map[string]any `json:"orders"`
	}
	require.NoError(t, json.Unmarshal(raw, &trace))
	require.Len(t, trace.Orders, 1)
	require.Equal(t, attachedOf(t, r.Body), attachedOf(t, trace.Orders[0]), "the admin API shows what the answer showed")

	again := apptest.Post(t, b.URL, sig)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM paper_orders WHERE symbol = 'TPSLUSDT'`))

	// Percent targets on a market order are taken from the price read
	// when the order is sized (paper: the signal's price, else its
	// reference price 100), once, and stored in the intent.
	r = apptest.Post(t, b.URL, body(`"action":"sell","quantity":"1","take_profit":{"percent":2},"stop_loss":"1.5%","trace_id":"tp-2"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, map[string][2]string{"take_profit": {"98", "placed"}, "stop_loss": {"101.5", "placed"}}, attachedOf(t, r.Body))
	require.Equal(t, "100", apptest.Text(t, b.Pool, `SELECT order_spec->'TakeProfit'->>'From' FROM dispatch_intents WHERE trace_id = 'k:tp-2'`))
	// The audit event says what was asked and what it became, from which
	// price.
	require.Equal(t, `[{"role": "take_profit", "percent": "2", "from_price": "100", "trigger_price": "98"}, {"role": "stop_loss", "percent": "1.5", "from_price": "100", "trigger_price": "101.5"}]`,
		apptest.Text(t, b.Pool, `SELECT detail->>'attached' FROM trace_history WHERE trace_id = 'k:tp-2' AND event = 'dispatched'`))

	// A limit entry's percent targets are from its limit price, and wait
	// for the entry to fill.
	r = apptest.Post(t, b.URL, body(`"action":"buy","quantity":"1","price":"50","take_profit":"10%","trace_id":"tp-3"`))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, map[string][2]string{"take_profit": {"55", "waiting_for_entry"}}, attachedOf(t, r.Body))
}

// What paper (or any venue) cannot take is refused before anything is
// claimed: a trailing stop (422 unsupported), and bad targets (400).
func TestAttachedExitsRefusedBeforeAnythingIsClaimed(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	body := func(members string) string {
		return fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"TPSLUSDT",%s}`, apptest.Secret, members)
	}

	r := apptest.Post(t, b.URL, body(`"action":"buy","quantity":"1","trailing_stop":{"percent":1},"trace_id":"tr-1"`))
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
	require.Equal(t, "unsupported", r.Str("code"))
	require.Contains(t, r.Str("detail"), "trailing_stop is not supported on paper")

	for _, c := range []struct{ members, detail string }{
		{`"action":"buy","quantity":"1","price":"100","take_profit":"90","trace_id":"tr-2"`, "take_profit: of a buy must be above its price"},
		{`"action":"sell","quantity":"1","price":"100","stop_loss":"90","trace_id":"tr-3"`, "stop_loss: of a sell must be above its price"},
		{`"action":"close","quantity":"1","stop_loss":"90","trace_id":"tr-4"`, "stop_loss: protects an entry"},
		{`"action":"buy","quantity":"1","take_profit":"-5","trace_id":"tr-5"`, "take_profit: price must be greater than 0"},
		{`"action":"buy","quantity":"1","take_profit":{"percent":0},"trace_id":"tr-6"`, "take_profit: percent must be greater than 0"},
	} {
		r := apptest.Post(t, b.URL, body(c.members))
		require.Equal(t, http.StatusBadRequest, r.Status, r.Raw)
		require.Equal(t, "invalid_signal", r.Str("code"))
		require.Contains(t, r.Str("detail"), c.detail, r.Raw)
	}
	require.Zero(t, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids"), "nothing claimed")
	require.Zero(t, apptest.Count(t, b.Pool, "SELECT count(*) FROM paper_orders"), "nothing placed")
}

// An entry with percent exits whose answer is lost: 202, then the
// reconcile job (River) records the order with the exits resolved before
// it was sent, as the intent stored them.
func TestLostAnswerOfAnEntryWithExitsIsReconciledWithThem(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	b.App.Paper().SetFaults(paper.Faults{LoseAnswer: true})
	body := apptest.Signal(`"price":"200","order_type":"market","take_profit":"5%","stop_loss":{"percent":2.5},"trace_id":"lost-exits"`)
	r := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	require.Nil(t, r.Body["attached"], "nothing is known yet")
	b.App.Paper().SetFaults(paper.Faults{})

	require.Eventually(t, func() bool {
		return apptest.Text(t, b.Pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:lost-exits'") == "dispatched"
	}, 30*time.Second, 20*time.Millisecond)
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:lost-exits' AND take_profit = 210 AND stop_loss = 195`))
	require.Equal(t, 1, apptest.Count(t, b.Pool, `SELECT count(*) FROM paper_orders WHERE take_profit = 210 AND stop_loss = 195`))
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:lost-exits' AND event = 'reconciled'"))
}

// A fan-out with exits: each account decides for itself. Binance spot
// (exits protect a buy: a spot sell opens no position) refuses a sell's
// take-profit with 422 unsupported without blocking the others; paper and
// Bybit place the entry (a Bybit short) with the exit resolved from their
// own prices (paper 100, Bybit's last price 60000), and each account's
// answer shows it.
func TestFanOutWithExitsEachAccountDecides(t *testing.T) {
	t.Parallel()
	r := startFanOutRig(t)
	body := `{"secret":"` + apptest.Secret + `","accounts":["paper","main","bybit1"],"symbol":"BTCUSDT","action":"sell","quantity":"0.002","take_profit":"2%","trace_id":"fan-exits"}`
	first := apptest.Post(t, r.b.URL, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	got := answers(t, first)

	require.Equal(t, http.StatusUnprocessableEntity, statusOf(got["main"]))
	require.Equal(t, "unsupported", problemCode(got["main"]))
	require.Empty(t, r.main.Orders(), "nothing sent to binance")

	require.Equal(t, http.StatusOK, statusOf(got["paper"]))
	require.Equal(t, map[string][2]string{"take_profit": {"98", "placed"}},
		attachedOf(t, got["paper"]["result"].(map[string]any)))
	require.Equal(t, http.StatusOK, statusOf(got["bybit1"]))
	require.Equal(t, map[string][2]string{"take_profit": {"58800", "placed"}},
		attachedOf(t, got["bybit1"]["result"].(map[string]any)))
	held := r.bybit1.Orders()
	require.Len(t, held, 1)
	require.Equal(t, "58800", held[0].TakeProfit.String())

	// Binance's refusal claimed nothing, so the same signal without the
	// exit can go to it at once.
	require.Zero(t, apptest.Count(t, r.b.Pool, "SELECT count(*) FROM trace_ids WHERE trace_id = '@main:k:fan-exits'"))
}
