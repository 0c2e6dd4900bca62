package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A fan-out to three accounts — two Binance USDⓈ-M sub-accounts (two
// fakes, each accepting only its own key) and a Bybit account — through a
// `hoox serve` that SIGKILLs itself once a venue accepted an account's
// order, before anything is committed. The sender resends the signal to a
// fresh replica: the order the dead process placed is adopted (200); an
// account whose request may still be in flight is reconciled (202) and
// placed once the venue's accept window has passed; the others are
// placed. Each account ends with exactly one order at its venue and one
// recorded row, and a second resend changes nothing. (Binance spot is
// left out on purpose: an order it never showed is never sent again,
// DESIGN's missed trade, so an account cut off mid-request stays
// unplaced there by design.)
func TestFanOutCrashDrillThenResendPlacesOneOrderPerAccount(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("an account cut off mid-request waits out the venue's accept window (~17 s)")
	}
	fakes, env, body := fanOutCrashRig(t, "fan-crash")
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	held := crashFanOut(t, dbURL, env, body, fakes)

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, r.Status, r.Raw)
	answers, ok := r.Body["accounts"].([]any)
	require.True(t, ok, r.Raw)
	require.Len(t, answers, 3)
	for _, a := range answers {
		a := a.(map[string]any)
		if _, ok := held[a["account"].(string)]; ok {
			require.Equal(t, float64(http.StatusOK), a["status"], "the held order is adopted: %v", a)
			continue
		}
		require.Contains(t, []float64{http.StatusOK, http.StatusAccepted}, a["status"], "placed, or reconciled while a request may be in flight: %v", a)
	}
	conds := map[string]func() bool{}
	for name := range fakes {
		conds[name] = func() bool {
			return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE exchange = $1 AND status = 'dispatched'", name) == 1
		}
	}
	awaitAll(t, 60*time.Second, "every account's order is recorded", conds)
	requireOneOrderPerAccount(t, pool, fakes, held)
	// At least the held orders were adopted (one booked by the venue just
	// after the kill, from a request already on the wire, is adopted too).
	require.GreaterOrEqual(t, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'dispatched' AND detail->>'adopted' = 'true'"), len(held))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"))
	requireOneOrderPerAccount(t, pool, fakes, held)
}

// The same crash, and nobody resends at first: the sweeper records the
// orders the dead process placed; a later resend is a repeat on those
// accounts and places only the missing ones.
func TestFanOutCrashDrillIsSweptThenTheResendPlacesTheRest(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the venue's accept window (~17 s) before the sweeper asks")
	}
	fakes, env, body := fanOutCrashRig(t, "fan-swept")
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	held := crashFanOut(t, dbURL, env, body, fakes)
	survivor, _ := startVenueServe(t, dbURL, append(env, "HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=1s")...)
	conds := map[string]func() bool{}
	for name := range held {
		conds[name] = func() bool {
			return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE exchange = $1 AND status = 'dispatched'", name) == 1
		}
	}
	// An account whose intent committed before the kill but whose order
	// the venue does not hold is settled by the sweeper only once the
	// venue's accept window has passed; a resend before that finds the
	// intent open, cannot trust the venue's "not found" yet and answers
	// 202 reconciling (seen under a CPU hog). The drill resends after. At
	// Bybit, a venue that may book a late request but never takes an ID
	// twice, the sweeper leaves such an intent open (asked_at set) for
	// the resend to send under the same ID (jobs.leftForTheResend).
	conds["every intent settled"] = func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM dispatch_intents WHERE (outcome IS NULL AND asked_at IS NULL) OR outcome = 'reconciling'") == 0
	}
	awaitAll(t, 60*time.Second, "the sweeper recorded the held orders and settled every intent", conds)

	r := apptest.Post(t, survivor.url, body)
	answers, ok := r.Body["accounts"].([]any)
	require.True(t, ok, r.Raw)
	placed := 0
	// An account whose intent committed before the kill but whose order
	// its venue never booked is placed by the resend: at Binance USDⓈ-M
	// the sweeper proved it absent and freed the key; at Bybit, which may
	// still book the dead request late, it left the intent open and the
	// resend sends it under the same ID (Bybit refuses a second create
	// under an orderLinkId: one order whichever arrives).
	for _, a := range answers {
		a := a.(map[string]any)
		name := a["account"].(string)
		if _, swept := held[name]; swept {
			require.Equal(t, float64(http.StatusConflict), a["status"], "swept, so a repeat: %v", a)
			continue
		}
		// Placed now; or, booked by the venue from a request already on
		// the wire just after the kill, swept too.
		require.Contains(t, []float64{http.StatusOK, http.StatusConflict}, a["status"], "%v", a)
		if a["status"] == float64(http.StatusOK) {
			placed++
		}
	}
	if placed > 0 {
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
	} else {
		require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	}
	requireOneOrderPerAccount(t, pool, fakes, held)
}

// fanOutCrashRig starts three accounts' fakes — two Binance USDⓈ-M
// sub-accounts (two fakes, each accepting only its own key) and a Bybit
// linear account — and returns them by account, hoox's environment for
// them and a fan-out signal to all three under key.
func fanOutCrashRig(t *testing.T, key string) (map[string]fakeVenue, []string, string) {
	t.Helper()
	startBinance := func(key, secret string) fakeVenue {
		s, err := binancefake.Start("127.0.0.1:0", binancefake.Options{APIKey: key, APISecret: secret})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s.Venue(binancefake.MarketFutures)
	}
	by, err := bybitfake.Start("127.0.0.1:0", bybitfake.Options{APIKey: "by1-key", APISecret: "by1-secret"})
	require.NoError(t, err)
	t.Cleanup(by.Close)
	fakes := map[string]fakeVenue{
		"main": startBinance("main-key", "main-secret"),
		"sub1": startBinance("sub1-key", "sub1-secret"),
		"by1":  by.Venue(bybitfake.CategoryLinear),
	}
	type account struct {
		Name      string `json:"name"`
		Venue     string `json:"venue"`
		APIKey    string `json:"api_key"`
		APISecret string `json:"api_secret"`
		BaseURL   string `json:"base_url"`
	}
	var accounts []account
	for _, name := range []string{"main", "sub1", "by1"} {
		venue := "binance-futures"
		if name == "by1" {
			venue = "bybit"
		}
		f := fakes[name]
		accounts = append(accounts, account{name, venue, f.APIKey(), f.APISecret(), f.URL()})
	}
	list, err := json.Marshal(accounts)
	require.NoError(t, err)
	env := []string{"HOOX_ACCOUNTS=" + string(list)}
	body := fmt.Sprintf(`{"secret":%q,"accounts":["main","sub1","by1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","trace_id":%q}`, apptest.Secret, key)
	return fakes, env, body
}

// crashFanOut sends body to a `hoox serve` that kills itself after the
// first venue's answer and returns the client order ID each account's
// venue holds (at least one), with nothing committed.
func crashFanOut(t *testing.T, dbURL string, env []string, body string, fakes map[string]fakeVenue) map[string]string {
	t.Helper()
	pool := pgtest.OpenPool(t, dbURL)
	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	held := map[string]string{}
	for name, f := range fakes {
		orders := f.Orders()
		require.LessOrEqual(t, len(orders), 1, name)
		if len(orders) == 1 {
			held[name] = orders[0].ClientOrderID
		}
	}
	require.NotEmpty(t, held, "a venue accepted an order before the kill")
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"), "no account's claim was committed")
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	return held
}

// requireOneOrderPerAccount: each account's venue holds one order (the
// one held at the crash, when there was one) and hoox one row for it.
func requireOneOrderPerAccount(t *testing.T, pool *pgxpool.Pool, fakes map[string]fakeVenue, held map[string]string) {
	t.Helper()
	for name, f := range fakes {
		orders := f.Orders()
		require.Len(t, orders, 1, "%s: one order at its venue", name)
		if id, ok := held[name]; ok {
			require.Equal(t, id, orders[0].ClientOrderID, "%s: the order the dead process placed was kept", name)
		}
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE exchange = $1 AND client_order_id = $2", name, orders[0].ClientOrderID),
			"%s: one row, for the venue's order", name)
	}
	require.Equal(t, len(fakes), apptest.Count(t, pool, "SELECT count(*) FROM orders"))
}
