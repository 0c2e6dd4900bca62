package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// An okx-swap long with a stop-loss on the entry and a 1.5 % trailing
// stop, hoox killed with -9 right after OKX booked the trailing stop (its
// algo order) and before it was recorded. Nobody resends (the entry was
// committed): the next process's sweeper looks the trailing stop up by
// its algoClOrdId, checks its callbackRatio and adopts it. OKX holds the
// entry once and one trailing stop; the database records it once.
func TestOKXEntryWithTrailingStopCrashAfterTheLegIsAdoptedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake := okxfake.New(t, okxfake.Options{}) // BTCUSDT at 60000
	env := []string{"HOOX_OKX_SWAP_API_KEY=" + fake.APIKey(), "HOOX_OKX_SWAP_API_SECRET=" + fake.APISecret(),
		"HOOX_OKX_SWAP_API_PASSPHRASE=" + fake.Passphrase(), "HOOX_OKX_SWAP_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",` +
		`"stop_loss":"59000","trailing_stop":{"percent":1.5},"trace_id":"okx-trail-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	requireOne := func() {
		t.Helper()
		require.Len(t, fake.Orders(), 1, "one entry")
		require.Equal(t, "59000", fake.Orders()[0].SlTriggerPx.String(), "its stop-loss on the entry")
		algos := fake.AlgoOrders()
		require.Len(t, algos, 1, "one trailing stop")
		require.Equal(t, "move_order_stop", algos[0].OrdType)
		require.Equal(t, "0.015", algos[0].CallbackRatio.String())
		require.Equal(t, "sell", algos[0].Side)
		require.True(t, algos[0].ReduceOnly)
	}

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.AlgoOrders(), 1, "the trailing stop is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:okx-trail-crash'"), "only the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, append(env, "HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=1s")...)
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE trace_id = 'k:okx-trail-crash' AND outcome = 'dispatched'") == 1
	}, 60*time.Second, 100*time.Millisecond, "the sweeper finished the trailing stop")
	requireOne()
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:okx-trail-crash'
		AND role = 'trailing_stop' AND status = 'open' AND callback_rate = 1.5`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_events WHERE trace_id = 'k:okx-trail-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'trailing_stop'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOne()
}
