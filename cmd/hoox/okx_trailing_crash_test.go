package main

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/okx/okxfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// okxTrailingRig is an okx-swap fake (BTCUSDT at 60000) and the signal of
// a 0.03 BTC long with a stop-loss on the entry and a 1.5 % trailing stop;
// requireOne checks OKX holds the entry once, with its stop-loss, and one
// reduce-only move_order_stop at callbackRatio 0.015.
func okxTrailingRig(t *testing.T, traceID string) (fake *okxfake.Server, env []string, body string, requireOne func()) {
	t.Helper()
	fake = okxfake.New(t, okxfake.Options{})
	env = []string{"HOOX_OKX_SWAP_API_KEY=" + fake.APIKey(), "HOOX_OKX_SWAP_API_SECRET=" + fake.APISecret(),
		"HOOX_OKX_SWAP_API_PASSPHRASE=" + fake.Passphrase(), "HOOX_OKX_SWAP_BASE_URL=" + fake.URL}
	body = `{"secret":"` + apptest.Secret + `","exchange":"okx-swap","symbol":"BTCUSDT","action":"long","quantity":"0.03",` +
		`"stop_loss":"59000","trailing_stop":{"percent":1.5},"trace_id":"` + traceID + `"}`
	requireOne = func() {
		t.Helper()
		require.Len(t, fake.Orders(), 1, "one entry")
		require.Equal(t, "59000", fake.Orders()[0].SlTriggerPx.String(), "its stop-loss on the entry")
		algos := fake.TrailingStops()
		require.Len(t, algos, 1, "one trailing stop")
		require.Equal(t, "move_order_stop", algos[0].OrdType)
		require.Equal(t, "0.015", algos[0].CallbackRatio.String())
		require.Equal(t, "sell", algos[0].Side)
		require.True(t, algos[0].ReduceOnly)
	}
	return fake, env, body, requireOne
}

// An okx-swap long with a stop-loss on the entry and a 1.5 % trailing
// stop, hoox killed with -9 right after OKX booked the trailing stop (its
// algo order) and before it was recorded. Nobody resends (the entry was
// committed): the next process's sweeper looks the trailing stop up by
// its algoClOrdId, checks its callbackRatio and adopts it. OKX holds the
// entry once and one trailing stop; the database records it once.
func TestOKXEntryWithTrailingStopCrashAfterTheLegIsAdoptedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake, env, body, requireOne := okxTrailingRig(t, "okx-trail-crash")
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.TrailingStops(), 1, "the trailing stop is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:okx-trail-crash'"), "only the entry is recorded")

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:okx-trail-crash", 1, "the sweeper finished the trailing stop")
	requireOne()
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:okx-trail-crash'
		AND role = 'trailing_stop' AND status = 'open' AND callback_rate = 1.5`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:okx-trail-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'trailing_stop'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOne()
}

// The same entry, hoox killed with -9 between OKX's answer for the entry
// and its commit; the sender resends to /webhook. The resend adopts the
// entry and places the trailing stop once; its answer's attached lists the
// entry's stop-loss and the trailing stop, with its callback rate, its IDs
// and no trigger price.
func TestOKXEntryWithTrailingStopCrashAfterTheEntryThenResendPlacesItOnce(t *testing.T) {
	t.Parallel()
	fake, env, body, requireOne := okxTrailingRig(t, "okx-trail-crash-2")
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Empty(t, fake.TrailingStops(), "no trailing stop before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 2, r.Raw)
	sl, trail := attached[0].(map[string]any), attached[1].(map[string]any)
	require.Equal(t, "stop_loss", sl["role"], r.Raw)
	require.Equal(t, "59000", sl["trigger_price"], r.Raw)
	require.NotContains(t, sl, "client_order_id", r.Raw, "held on the entry itself")
	require.Equal(t, "trailing_stop", trail["role"], r.Raw)
	require.Equal(t, "placed", trail["status"], r.Raw)
	require.Equal(t, "1.5", trail["callback_rate"], r.Raw)
	require.NotContains(t, trail, "trigger_price", r.Raw)
	require.Equal(t, fake.TrailingStops()[0].AlgoID, trail["exchange_order_id"], r.Raw)
	require.Equal(t, fake.TrailingStops()[0].AlgoClOrdID, trail["client_order_id"], r.Raw)
	requireOne()
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOne()
}
