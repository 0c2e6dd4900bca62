package main

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A Bybit linear entry with a trailing stop of 1 %, `hoox serve` killed
// with -9 right after Bybit set the position's trailing stop and before
// hoox recorded it. The price then moves (a fresh percent would give
// another distance), and nobody resends: the next process's sweeper reads
// the position, finds the distance resolved before the crash (600, 1 % of
// the 60000 fill) and adopts it. Bybit changed the setting once; one
// entry order; the leg is recorded once, with its distance, and a resend
// is a duplicate that sets nothing.
func TestBybitEntryWithTrailingStopCrashAfterTheSettingIsAdoptedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake := bybitfake.New(t, bybitfake.Options{}) // BTCUSDT at 60000, tick 0.10
	env := []string{"HOOX_BYBIT_API_KEY=" + fake.APIKey(), "HOOX_BYBIT_API_SECRET=" + fake.APISecret(), "HOOX_BYBIT_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",` +
		`"trailing_stop":{"percent":1},"trace_id":"bybit-trail-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Equal(t, "600", fake.TrailingStop("BTCUSDT").String(), "Bybit set the trailing stop")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:bybit-trail-crash'"), "only the entry is recorded")

	fake.SetTicker(bybitfake.CategoryLinear, "BTCUSDT", decimal.RequireFromString("61000"))
	survivor := sweeperFinishesLegs(t, dbURL, env, "k:bybit-trail-crash", 1, "the sweeper finished the trailing stop")
	requireOneBybitTrailingStop(t, fake)
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:bybit-trail-crash'
		AND role = 'trailing_stop' AND status = 'open' AND trailing_distance = 600`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:bybit-trail-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'trailing_stop'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneBybitTrailingStop(t, fake)
}

// requireOneBybitTrailingStop checks the fake holds the entry once and a
// trailing stop of 600 set once on the long it opened.
func requireOneBybitTrailingStop(t *testing.T, fake *bybitfake.Server) {
	t.Helper()
	require.Len(t, fake.Orders(), 1, "one entry")
	require.Equal(t, "Buy", fake.Position("BTCUSDT").Side)
	require.Equal(t, "600", fake.TrailingStop("BTCUSDT").String())
	require.Equal(t, 1, fake.TrailingStopSets("BTCUSDT"), "set once")
	require.Equal(t, 1, fake.Requests(bybitfake.PathTradingStop), "one trading-stop request in all")
}

// The same entry, hoox killed with -9 between Bybit's answer for the entry
// and its commit; the sender resends. The resend adopts the entry and sets
// the trailing stop once; its answer shows it in attached with its
// distance and no trigger price.
func TestBybitEntryWithTrailingStopCrashAfterTheEntryThenResendSetsItOnce(t *testing.T) {
	t.Parallel()
	fake := bybitfake.New(t, bybitfake.Options{})
	env := []string{"HOOX_BYBIT_API_KEY=" + fake.APIKey(), "HOOX_BYBIT_API_SECRET=" + fake.APISecret(), "HOOX_BYBIT_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",` +
		`"trailing_stop":{"percent":1},"trace_id":"bybit-trail-crash-2"}`
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Zero(t, fake.Requests(bybitfake.PathTradingStop), "no trailing stop before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 1, r.Raw)
	a := attached[0].(map[string]any)
	require.Equal(t, "trailing_stop", a["role"], r.Raw)
	require.Equal(t, "placed", a["status"], r.Raw)
	require.Equal(t, "600", a["trailing_distance"], r.Raw)
	require.NotContains(t, a, "trigger_price", r.Raw)
	requireOneBybitTrailingStop(t, fake)
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneBybitTrailingStop(t, fake)
}
