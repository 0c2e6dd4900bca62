package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// requireOneTrailingStop checks the fake holds the entry once and one
// reduce-only trailing stop at callbackRate 1.5.
func requireOneTrailingStop(t *testing.T, fake *binancefake.Server) {
	t.Helper()
	require.Len(t, fake.Orders(), 1, "one entry")
	algos := fake.AlgoOrders()
	require.Len(t, algos, 1, "one trailing stop")
	require.Equal(t, "TRAILING_STOP_MARKET", algos[0].Type)
	require.Equal(t, "1.5", algos[0].CallbackRate.String())
	require.Equal(t, "SELL", algos[0].Side)
	require.True(t, algos[0].ReduceOnly)
}

func trailingRig(t *testing.T, traceID string) (*binancefake.Server, []string, string) {
	t.Helper()
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",` +
		`"trailing_stop":{"percent":1.5},"trace_id":"` + traceID + `"}`
	return fake, env, body
}

// An entry with a trailing stop on Binance USDⓈ-M, hoox killed with -9
// right after Binance booked the trailing stop and before it was recorded.
// Nobody resends (the entry was committed): the next process's sweeper
// looks the trailing stop up by its client algo ID, checks its
// callbackRate and adopts it. The venue holds one trailing stop; the
// database records it once, with its rate.
func TestVenueEntryWithTrailingStopCrashAfterTheLegIsAdoptedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake, env, body := trailingRig(t, "trail-crash")
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.AlgoOrders(), 1, "the trailing stop is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:trail-crash'"), "only the entry is recorded")

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:trail-crash", 1, "the sweeper finished the trailing stop")
	requireOneTrailingStop(t, fake)
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:trail-crash'
		AND role = 'trailing_stop' AND status = 'open' AND callback_rate = 1.5`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:trail-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'trailing_stop'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneTrailingStop(t, fake)
}

// The same entry, hoox killed with -9 between Binance's answer for the
// entry and its commit; the sender resends. The resend adopts the entry
// and places the trailing stop once; its answer shows it in attached with
// its callback rate and no trigger price.
func TestVenueEntryWithTrailingStopCrashAfterTheEntryThenResendPlacesItOnce(t *testing.T) {
	t.Parallel()
	fake, env, body := trailingRig(t, "trail-crash-2")
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Empty(t, fake.AlgoOrders(), "no exit before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 1, r.Raw)
	a := attached[0].(map[string]any)
	require.Equal(t, "trailing_stop", a["role"], r.Raw)
	require.Equal(t, "placed", a["status"], r.Raw)
	require.Equal(t, "1.5", a["callback_rate"], r.Raw)
	require.NotContains(t, a, "trigger_price", r.Raw)
	require.NotEmpty(t, a["exchange_order_id"], r.Raw)
	requireOneTrailingStop(t, fake)
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneTrailingStop(t, fake)
}
