package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// ocoRig is a Binance spot fake (ETHUSDT at 3000, a 0.1 % commission
// taken in the coin bought) and a buy of 1 ETH with a take-profit 2 %
// above the fill and a stop-loss 2 % below it.
func ocoRig(t *testing.T, traceID string) (*binancefake.Server, []string, string) {
	t.Helper()
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetSpotCommission(decimal.RequireFromString("0.001"))
	env := []string{"HOOX_BINANCE_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",` +
		`"take_profit":{"percent":2},"stop_loss":"2%","trace_id":"` + traceID + `"}`
	return fake, env, body
}

// requireOneOCO checks the venue holds one entry and one order list, with
// the targets resolved from the fill before any crash and the quantity
// the entry received net of its fee.
func requireOneOCO(t *testing.T, fake *binancefake.Server) {
	t.Helper()
	require.Len(t, fake.Orders(), 1, "one entry")
	lists := fake.OrderLists()
	require.Len(t, lists, 1, "one OCO order list")
	require.Equal(t, "3060", lists[0].Above.Price.String(), "2 % above the fill, decided once")
	require.Equal(t, "2940", lists[0].Below.StopPrice.String())
	require.Equal(t, "0.99", lists[0].Quantity.String())
}

// A Binance spot entry with a take-profit and a stop-loss, hoox killed
// with -9 right after Binance booked the OCO list and before it was
// recorded; the price then moves. Nobody resends (the entry was
// committed): the next process's sweeper looks the list up by its
// listClientOrderId and adopts it — never sends a second list, which would
// try to sell the coins twice. One entry, one list, both recorded.
func TestVenueSpotEntryWithOCOCrashAfterTheListIsFinishedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake, env, body := ocoRig(t, "oco-crash")
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.OrderLists(), 1, "the list is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:oco-crash'"), "only the entry is recorded")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL"), "the leg's intent says it may exist")
	fake.SetPrice("ETHUSDT", decimal.RequireFromString("3010"))

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:oco-crash", 1, "the sweeper finished the exit")
	requireOneOCO(t, fake)
	require.Equal(t, 1, fake.Requests("/api/v3/orderList/oco"), "sent once")
	require.Equal(t, 2, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:oco-crash'"))
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:oco-crash' AND role = 'oco'
		AND status = 'open' AND take_profit = 3060 AND stop_loss = 2940 AND quantity = 0.99`))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:oco-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'oco'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneOCO(t, fake)

	// The adopted list was queued for following with its record: when the
	// price falls to its stop-loss, the survivor records the sale and the
	// strategy's ledger keeps only the dust the list did not sell.
	fake.MovePrice("ETHUSDT", decimal.RequireFromString("2900"))
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:oco-crash' AND role = 'oco'
			AND status = 'filled' AND executed_exit = 'stop_loss' AND filled_quantity = 0.99`) == 1
	}, 60*time.Second, 100*time.Millisecond, "the list's execution is recorded by its follow job")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM spot_ledger WHERE strategy = '' AND quantity = 0.009"),
		"0.999 ETH received, 0.99 sold by the list")
}

// The same entry, hoox killed with -9 between Binance's answer for the
// entry and its commit; the sender resends. The resend adopts the entry
// and places the list once; its answer shows both exits beside the order
// with the list's IDs.
func TestVenueSpotEntryWithOCOCrashAfterTheEntryThenResendPlacesOneList(t *testing.T) {
	t.Parallel()
	fake, env, body := ocoRig(t, "oco-crash-2")
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Empty(t, fake.OrderLists(), "no exit before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 2, r.Raw)
	for i, role := range []string{"take_profit", "stop_loss"} {
		a := attached[i].(map[string]any)
		require.Equal(t, role, a["role"], r.Raw)
		require.Equal(t, "placed", a["status"], r.Raw)
		require.Equal(t, fake.OrderLists()[0].ListClientOrderID, a["client_order_id"], r.Raw)
		require.NotEmpty(t, a["exchange_order_id"], r.Raw)
	}
	requireOneOCO(t, fake)
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneOCO(t, fake)
}
