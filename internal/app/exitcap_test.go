package app_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
)

// exitCapRig is a hoox whose binance-futures venue is a fake with
// notifications going to a notification fake.
type exitCapRig struct {
	b      *apptest.Bundle
	fake   *binancefake.Server
	notify *notifyfake.Server
}

func startExitCapRig(t *testing.T) exitCapRig {
	t.Helper()
	r := exitCapRig{fake: binancefake.New(t, binancefake.Options{}), notify: notifyfake.New(t)}
	r.b = apptest.Setup(t, func(c *app.Config) {
		*c.Venue("binance-futures") = app.VenueSettings{APIKey: r.fake.APIKey(), APISecret: r.fake.APISecret(), BaseURL: r.fake.URL}
		c.Notify = r.notify.Config()
	})
	return r
}

func futuresEntry(trace, exits string) string {
	return `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"BTCUSDT","action":"buy","quantity":"0.01",` +
		exits + `,"trace_id":"` + trace + `"}`
}

// Binance USDⓈ-M caps the algo orders resting on a symbol
// (MAX_NUM_ALGO_ORDERS, here 2) and refuses one more only when it is sent
// — after the entry filled. Through /webhook: an entry whose take-profit
// and stop-loss fit exactly is placed with both; then, with the cap full,
// an entry with a stop-loss is refused 422 order_rejected before anything
// is sent (no entry at Binance, no position without its stop), the trace
// is kept rejected with the count read in its audit, and the trader is
// notified.
func TestWebhookBinanceFuturesEntryIsRefusedWhenTheVenueCapCannotTakeItsExits(t *testing.T) {
	t.Parallel()
	r := startExitCapRig(t)
	r.fake.SetMaxNumAlgoOrders("BTCUSDT", 2)

	first := apptest.Post(t, r.b.URL, futuresEntry("cap-room", `"take_profit":"55000","stop_loss":"45000"`))
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	require.Len(t, r.fake.AlgoOrders(), 2, "room for exactly the two exits: both placed")
	require.Len(t, r.fake.Orders(), 1)
	require.Equal(t, `[{"adds": 2, "open": 0, "limit": 2, "filter": "MAX_NUM_ALGO_ORDERS", "symbol": "BTCUSDT", "counted": "stop/take-profit orders"}]`,
		apptest.Text(t, r.b.Pool, `SELECT detail->>'exit_caps' FROM trace_history WHERE trace_id = 'k:cap-room' AND event = 'dispatched'`),
		"the count read before the intent is in the audit")

	refused := apptest.Post(t, r.b.URL, futuresEntry("cap-full", `"stop_loss":"45000"`))
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, refused.Raw)
	require.Equal(t, "order_rejected", refused.Str("code"), refused.Raw)
	require.Contains(t, refused.Str("detail"), "MAX_NUM_ALGO_ORDERS allows 2 open stop/take-profit orders on BTCUSDT and 2 are open", refused.Raw)
	require.Len(t, r.fake.Orders(), 1, "no entry sent")
	require.Len(t, r.fake.AlgoOrders(), 2)
	require.Equal(t, "rejected", apptest.Text(t, r.b.Pool, `SELECT status FROM trace_ids WHERE trace_id = 'k:cap-full'`))
	require.Zero(t, apptest.Count(t, r.b.Pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:cap-full'`))
	require.Zero(t, apptest.Count(t, r.b.Pool, `SELECT count(*) FROM dispatch_intents WHERE trace_id = 'k:cap-full'`), "no intent: nothing consumed the client order ID")
	require.Equal(t, "2", apptest.Text(t, r.b.Pool,
		`SELECT detail->'exit_caps'->0->>'open' FROM trace_history WHERE trace_id = 'k:cap-full' AND event = 'rejected' AND (detail->>'sent')::bool = false`))
	msg := r.notify.Await(t, notify.ChannelTelegram, 1)[0].Text()
	require.Contains(t, msg, "k:cap-full")
	require.Contains(t, msg, "MAX_NUM_ALGO_ORDERS")

	again := apptest.Post(t, r.b.URL, futuresEntry("cap-full", `"stop_loss":"45000"`))
	require.Equal(t, http.StatusConflict, again.Status, "a repeat is answered from the trace: %s", again.Raw)
	require.Len(t, r.fake.Orders(), 1)
}

// Two signals can both pass the count before either's exits are placed:
// the cap fills between the check and the exit (the fake fills it when
// the entry arrives). The exit Binance then refuses (-4045) ends
// leg_rejected with Binance's reason — a refusal, never an unknown left to
// retry — the trader is notified that the position lacks its stop-loss,
// and the entry stays recorded as placed.
func TestWebhookBinanceFuturesExitRefusedAtTheVenueCapIsRejectedAndNotified(t *testing.T) {
	t.Parallel()
	r := startExitCapRig(t)
	r.fake.SetMaxNumAlgoOrders("BTCUSDT", 2)
	r.fake.FillAlgoCapOnNextOrder("BTCUSDT")

	out := apptest.Post(t, r.b.URL, futuresEntry("cap-race", `"stop_loss":"45000"`))
	require.Equal(t, http.StatusOK, out.Status, out.Raw)
	attached, _ := out.Body["attached"].([]any)
	require.Len(t, attached, 1, out.Raw)
	require.Equal(t, "not_placed", attached[0].(map[string]any)["status"], "the answer says the stop-loss is not there: %s", out.Raw)
	orders, _ := out.Body["orders"].([]any)
	require.Len(t, orders, 2, out.Raw)
	require.Equal(t, "Reach max stop order limit.", orders[1].(map[string]any)["reject_reason"], out.Raw)
	require.Len(t, r.fake.Orders(), 1, "the entry filled")
	require.Equal(t, "dispatched", apptest.Text(t, r.b.Pool, `SELECT status FROM trace_ids WHERE trace_id = 'k:cap-race'`))
	require.Equal(t, "filled", apptest.Text(t, r.b.Pool, `SELECT status FROM orders WHERE trace_id = 'k:cap-race' AND role = 'primary'`))
	require.Equal(t, "rejected|Reach max stop order limit.", apptest.Text(t, r.b.Pool,
		`SELECT status || '|' || reject_reason FROM orders WHERE trace_id = 'k:cap-race' AND role = 'stop_loss'`))
	require.Equal(t, 1, apptest.Count(t, r.b.Pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:cap-race' AND event = 'leg_rejected'`))
	require.Equal(t, 1, apptest.Count(t, r.b.Pool, `SELECT count(*) FROM order_legs WHERE trace_id = 'k:cap-race' AND outcome = 'rejected'`),
		"settled: no sweep retries it")
	for _, a := range r.fake.AlgoOrders() {
		require.Contains(t, a.ClientAlgoID, "manual", "only the orders that filled the cap rest")
	}
	msg := r.notify.Await(t, notify.ChannelTelegram, 1)[0].Text()
	require.Contains(t, msg, "k:cap-race")
	require.Contains(t, msg, "stop_loss of order")
	require.Contains(t, msg, "Reach max stop order limit.")
}
