package main

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A Binance spot buy of 1 ETH with only a stop-loss 2 % below the fill,
// hoox killed with -9 right after Binance booked the STOP_LOSS sell and
// before it was recorded; the price then moves. Nobody resends (the entry
// was committed): the next process's sweeper looks the stop up by its
// client order ID and adopts it — never sends a second stop, which would
// try to sell the coins twice (spot may book a late request, so a missing
// one is never re-sent either). One entry, one stop, both recorded; a
// resend is a 409.
func TestVenueSpotEntryWithLoneStopLossCrashAfterTheStopIsAdoptedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetSpotCommission(decimal.RequireFromString("0.001"))
	env := []string{"HOOX_BINANCE_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",` +
		`"stop_loss":"2%","trace_id":"lone-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	placements := func() int {
		n := 0
		for _, r := range fake.RequestLog("/api/v3/order") {
			if r.Method == http.MethodPost {
				n++
			}
		}
		return n
	}
	requireOneStop := func() {
		t.Helper()
		held := fake.Orders()
		require.Len(t, held, 2, "the entry and one stop")
		stop := held[1]
		require.Equal(t, "STOP_LOSS", stop.Type)
		require.Equal(t, "SELL", stop.Side)
		require.Equal(t, "2940", stop.StopPrice.String(), "2 % below the fill at 3000, decided once")
		require.Equal(t, "0.99", stop.Quantity.String(), "1 ETH less its 0.001 ETH fee, down to the step")
		require.Equal(t, "NEW", stop.Status)
		require.Equal(t, 2, placements(), "the entry and the stop, each sent once")
	}

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.Orders(), 2, "the stop is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:lone-crash'"), "only the entry is recorded")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL"), "the leg's intent says it may exist")
	fake.SetPrice("ETHUSDT", decimal.RequireFromString("3010"))

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:lone-crash", 1, "the sweeper finished the exit")
	requireOneStop()
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:lone-crash' AND role = 'stop_loss'
		AND status = 'open' AND stop_loss = 2940 AND quantity = 0.99`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:lone-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'stop_loss'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneStop()
}

// The same kind of entry with only a take-profit, hoox killed with -9
// between Binance's answer for the entry and its commit; the sender
// resends. The resend adopts the entry and places the take-profit once (a
// LIMIT_MAKER at 3% above the fill); its answer shows it in "attached".
func TestVenueSpotEntryWithLoneTakeProfitCrashAfterTheEntryThenResendPlacesItOnce(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	env := []string{"HOOX_BINANCE_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",` +
		`"take_profit":{"percent":3},"trace_id":"lone-crash-2"}`
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1, "no exit before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	held := fake.Orders()
	require.Len(t, held, 2, "the entry and one take-profit")
	require.Equal(t, "LIMIT_MAKER", held[1].Type)
	require.Equal(t, "3090", held[1].Price.String(), "3 % above the fill at 3000")
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 1, r.Raw)
	a := attached[0].(map[string]any)
	require.Equal(t, "take_profit", a["role"], r.Raw)
	require.Equal(t, "3090", a["trigger_price"], r.Raw)
	require.Equal(t, held[1].ClientOrderID, a["client_order_id"], r.Raw)

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.Orders(), 2, "placed once")
}
