package main

import (
	"net/http"
	"os/exec"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A Binance USDⓈ-M limit entry with a take-profit and a stop-loss rests,
// fills 0.5 of 2 and is cancelled at Binance. hoox's follow job records
// the cancel (which plans the exits of the 0.5, migration 00018) and
// places the first exit; hoox is killed with -9 right after Binance booked
// it, before its record. The next process's sweeper adopts that exit by
// its clientAlgoId and places the second: two algo orders in all, each
// sent once, for 0.5.
func TestVenueLimitEntryCancelledAfterAPartialFillCrashAfterTheFirstExitIsFinishedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"2",` +
		`"order_type":"limit","price":"2990","take_profit":{"percent":2},"stop_loss":"2900","trace_id":"part-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	doomed, _ := startVenueServe(t, dbURL, append(env, "HOOX_DRILL_CRASH_AFTER_LEG=true")...)
	r := apptest.Post(t, doomed.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "open", r.Str("order", "status"), r.Raw)
	entry := r.Str("order", "client_order_id")
	require.NoError(t, fake.PartialFill(entry, decimal.RequireFromString("0.5")))
	require.NoError(t, fake.CancelOrder(entry))

	var exit *exec.ExitError
	require.ErrorAs(t, <-waitOr(doomed.exited), &exit, "hoox was killed after the first exit's answer")
	require.Len(t, fake.AlgoOrders(), 1, "the first exit is booked")
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE client_order_id = '`+entry+`'
		AND status = 'cancelled' AND filled_quantity = 0.5`), "the cancel is recorded")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:part-crash'"), "no exit recorded yet")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL"))
	fake.SetPrice("ETHUSDT", decimal.RequireFromString("3010"))

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:part-crash", 2, "the sweeper finished both exits")
	algos := fake.AlgoOrders()
	require.Len(t, algos, 2, "one take-profit, one stop-loss")
	posts := 0
	for _, req := range fake.RequestLog("/fapi/v1/algoOrder") {
		if req.Method == http.MethodPost {
			posts++
		}
	}
	require.Equal(t, 2, posts, "each sent once: the first adopted, not sent again")
	require.Equal(t, "3049.8", algos[0].TriggerPrice.String(), "2 % above the average fill, decided before the crash")
	for _, a := range algos {
		require.Equal(t, "0.5", a.Quantity.String(), "sized to what filled")
	}
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:part-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.AlgoOrders(), 2)
}
