package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// splitRig is a Binance USDⓈ-M fake whose ETHUSDT takes at most 100 ETH
// per market order (MARKET_LOT_SIZE maxQty), holding a 250 ETH long: a
// full close is three reduce-only orders (100, 100, 50).
func splitRig(t *testing.T) (*binancefake.Server, []string, string) {
	t.Helper()
	d := decimal.RequireFromString
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetSymbol(binancefake.Symbol{Symbol: "ETHUSDT", Base: "ETH", Quote: "USDT",
		StepSize: d("0.01"), MinQty: d("0.01"), MaxQty: d("10000"), MarketMaxQty: d("100"),
		TickSize: d("0.01"), MinPrice: d("0.01"), MaxPrice: d("100000"), MinNotional: d("5"), Price: d("3000")})
	fake.SetPosition("ETHUSDT", d("250"))
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"split-crash"}`
	return fake, env, body
}

// requireOnePerPart checks the venue holds the three parts once each and
// the position is flat.
func requireOnePerPart(t *testing.T, fake *binancefake.Server) {
	t.Helper()
	orders := fake.Orders()
	require.Len(t, orders, 3, "one order per part")
	for _, o := range orders {
		require.Equal(t, 1, fake.Placements(o.ClientOrderID), "%s placed once", o.ClientOrderID)
		require.True(t, o.ReduceOnly)
	}
	require.True(t, fake.Position("ETHUSDT").IsZero(), "flat: %s left", fake.Position("ETHUSDT"))
}

// A split close, hoox killed with -9 right after the venue booked its
// first leg (the second part) and before it was recorded; nobody resends.
// The primary was committed, so the trace is settled and a resend would be
// a duplicate: the sweeper of the next process finishes the close — it
// looks the leg up and adopts it (Binance takes a filled order's client ID
// again, so a blind re-send would sell twice), then places the last part.
// The venue holds one order per part, all three recorded.
func TestVenueSplitCloseCrashAfterALegIsFinishedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake, env, body := splitRig(t)
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.Orders(), 2, "the primary and the first leg are booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:split-crash'"), "only the primary is recorded")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NOT NULL"), "the leg's intent says it may exist")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE outcome IS NULL AND sent_at IS NULL"), "the last part is planned")

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:split-crash", 2, "the sweeper finished the legs")
	requireOnePerPart(t, fake)
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:split-crash'"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:split-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true'"))
	require.Equal(t, 1, apptest.Count(t, pool, `SELECT count(*) FROM trace_ids t JOIN orders o ON o.id = t.order_id
		WHERE t.trace_id = 'k:split-crash' AND t.status = 'dispatched' AND o.role = 'primary'`), "the sweeper left the trace pointing at its primary order")

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.Orders(), 3, "nothing placed twice")
}

// A split close, hoox killed with -9 between the venue's answer for the
// primary (the first part) and its commit; the sender resends. The resend
// adopts the primary from its intent — the split planned before the crash,
// not a new one from the smaller position now held — and places the two
// other parts, which its answer lists.
func TestVenueSplitCloseCrashAfterThePrimaryThenResendPlacesEachPartOnce(t *testing.T) {
	t.Parallel()
	fake, env, body := splitRig(t)
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Equal(t, "150", fake.Position("ETHUSDT").String())

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	orders, _ := r.Body["orders"].([]any)
	require.Len(t, orders, 3, r.Raw)
	for i, want := range []string{"100", "100", "50"} {
		o := orders[i].(map[string]any)
		require.Equal(t, want, o["quantity"], r.Raw)
		require.Equal(t, "filled", o["status"], r.Raw)
	}
	require.Equal(t, "primary", r.Str("order", "role"))
	requireOnePerPart(t, fake)
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:split-crash'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.Orders(), 3)
}

// A close blocked by a resting reduce-only take-profit (Binance -2022):
// hoox cancels the take-profit and is killed with -9 before the close it
// sends next is booked (the fake holds that request until hoox is dead).
// The sender's resend finds the close's intent, and once the venue's
// accept window has passed the reconcile sends the close, now unblocked:
// the take-profit was cancelled once, the position closed by one order.
func TestVenueCancelThenCloseCrashBetweenTheCancelAndTheClose(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the venue's accept window (~17 s) before the close is sent again")
	}
	ctx := t.Context()
	d := decimal.RequireFromString
	fake := binancefake.New(t, binancefake.Options{})
	fake.SetPosition("ETHUSDT", d("10"))
	venue, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL})
	require.NoError(t, err)
	tp, err := venue.Place(ctx, exchange.Order{ClientOrderID: "manual-tp", Symbol: "ETHUSDT", Action: "sell", Side: "sell", ReduceOnly: true,
		OrderType: "limit", Quantity: d("10"), Price: decimal.NewNullDecimal(d("4000"))})
	require.NoError(t, err)
	require.Equal(t, exchange.StatusOpen, tp.Status, tp.Reason)
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"close","quantity":"1","trace_id":"unblock-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	held, release := fake.HoldPlacementAfterCancel()
	t.Cleanup(release)
	doomed, _ := startVenueServe(t, dbURL, env...)
	answered := make(chan int, 1)
	go func() { answered <- apptest.SendOnce(doomed.url + "|" + body) }()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the close was never sent after the cancel")
	}
	require.NoError(t, doomed.cmd.Process.Kill(), "SIGKILL between the cancel and the close")
	require.Equal(t, 0, <-answered, "the connection dies with the process")
	<-waitOr(doomed.exited)
	release()
	require.Equal(t, 1, fake.Cancels(), "the take-profit is cancelled")
	require.Equal(t, "10", fake.Position("ETHUSDT").String(), "the close was not booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"), "the close's intent is open")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, r.Status, r.Raw)
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:unblock-crash' AND status = 'dispatched'") == 1
	}, 60*time.Second, 100*time.Millisecond, "the close is recorded")
	require.True(t, fake.Position("ETHUSDT").IsZero(), "flat")
	closes := 0
	for _, o := range fake.Orders() {
		if o.ClientOrderID != "manual-tp" {
			closes++
			require.Equal(t, 1, fake.Placements(o.ClientOrderID))
		}
	}
	require.Equal(t, 1, closes, "one close")
	require.Equal(t, 1, fake.Cancels(), "nothing cancelled twice")
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
}

// requireOneExitEach checks the fake holds the entry once and one
// take-profit and one stop-loss, each placed once.
func requireOneExitEach(t *testing.T, fake *binancefake.Server) {
	t.Helper()
	require.Len(t, fake.Orders(), 1, "one entry")
	algos := fake.AlgoOrders()
	require.Len(t, algos, 2, "one take-profit and one stop-loss")
	require.Equal(t, "TAKE_PROFIT_MARKET", algos[0].Type)
	require.Equal(t, "3060", algos[0].TriggerPrice.String(), "2 % above the fill, decided once")
	require.Equal(t, "STOP_MARKET", algos[1].Type)
	require.Equal(t, "2940", algos[1].TriggerPrice.String())
}

// An entry with a take-profit and a stop-loss on Binance USDⓈ-M, hoox
// killed with -9 right after Binance booked the take-profit and before it
// was recorded; the price then moves. Nobody resends (the entry was
// committed; a resend would be a duplicate): the next process's sweeper
// looks the take-profit up by its client algo ID and adopts it — with the
// trigger resolved from the fill before the crash — and places the
// stop-loss. One entry, one take-profit, one stop-loss, all recorded.
func TestVenueEntryWithExitsCrashAfterTheTakeProfitIsFinishedByTheSweeper(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{}) // ETHUSDT at 3000
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",` +
		`"take_profit":{"percent":2},"stop_loss":"2%","trace_id":"exits-crash"}`
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_LEG", body)
	require.Len(t, fake.AlgoOrders(), 1, "the take-profit is booked")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:exits-crash'"), "only the entry is recorded")
	fake.SetPrice("ETHUSDT", decimal.RequireFromString("3010"))

	survivor := sweeperFinishesLegs(t, dbURL, env, "k:exits-crash", 2, "the sweeper finished the exits")
	requireOneExitEach(t, fake)
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:exits-crash'"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:exits-crash' AND event = 'leg_placed' AND detail->>'adopted' = 'true' AND detail->>'role' = 'take_profit'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneExitEach(t, fake)
}

// The same entry, hoox killed with -9 between Binance's answer for the
// entry and its commit; the sender resends. The resend adopts the entry
// and places each exit once, resolved from the entry's fill price; its
// answer shows them beside the order.
func TestVenueEntryWithExitsCrashAfterTheEntryThenResendPlacesEachExitOnce(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	env := []string{"HOOX_BINANCE_FUTURES_API_KEY=" + fake.APIKey(), "HOOX_BINANCE_FUTURES_API_SECRET=" + fake.APISecret(),
		"HOOX_BINANCE_FUTURES_BASE_URL=" + fake.URL}
	body := `{"secret":"` + apptest.Secret + `","exchange":"binance-futures","symbol":"ETHUSDT","action":"long","quantity":"1",` +
		`"take_profit":{"percent":2},"stop_loss":"2%","trace_id":"exits-crash-2"}`
	dbURL := pgtest.NewDatabase(t)

	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	require.Len(t, fake.Orders(), 1)
	require.Empty(t, fake.AlgoOrders(), "no exit before the entry is recorded")

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	attached, _ := r.Body["attached"].([]any)
	require.Len(t, attached, 2, r.Raw)
	for i, role := range []string{"take_profit", "stop_loss"} {
		a := attached[i].(map[string]any)
		require.Equal(t, role, a["role"], r.Raw)
		require.Equal(t, "placed", a["status"], r.Raw)
		require.NotEmpty(t, a["client_order_id"], r.Raw)
		require.NotEmpty(t, a["exchange_order_id"], r.Raw)
	}
	requireOneExitEach(t, fake)
	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	requireOneExitEach(t, fake)
}
