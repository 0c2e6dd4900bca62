package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A fan-out to three accounts — two Binance spot sub-accounts (two fakes,
// each accepting only its own key) and a Bybit account — through a
// `hoox serve` that SIGKILLs itself once a venue accepted an account's
// order, before anything is committed. The sender resends the signal to
// a fresh replica: each account ends with exactly one order at its venue
// and one recorded row (the ones the dead process placed are adopted,
// the missing ones placed), and a second resend changes nothing.
func TestFanOutCrashDrillThenResendPlacesOneOrderPerAccount(t *testing.T) {
	t.Parallel()
	startBinance := func(key, secret string) fakeVenue {
		s, err := binancefake.Start("127.0.0.1:0", binancefake.Options{APIKey: key, APISecret: secret})
		require.NoError(t, err)
		t.Cleanup(s.Close)
		return s.Venue(binancefake.MarketSpot)
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
		venue := "binance"
		if name == "by1" {
			venue = "bybit"
		}
		f := fakes[name]
		accounts = append(accounts, account{name, venue, f.APIKey(), f.APISecret(), f.URL()})
	}
	list, err := json.Marshal(accounts)
	require.NoError(t, err)
	env := []string{"HOOX_ACCOUNTS=" + string(list)}
	body := fmt.Sprintf(`{"secret":%q,"accounts":["main","sub1","by1"],"symbol":"BTCUSDT","action":"buy","quantity":"0.002","trace_id":"fan-crash"}`, apptest.Secret)

	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	doomed, _ := startVenueServe(t, dbURL, append(env, "HOOX_DRILL_CRASH_AFTER_VENUE=true")...)
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+body), "the connection dies with the process")
	var exit *exec.ExitError
	require.ErrorAs(t, <-waitOr(doomed.exited), &exit, "hoox was killed")
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

	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	answers, ok := r.Body["accounts"].([]any)
	require.True(t, ok, r.Raw)
	require.Len(t, answers, 3)
	for _, a := range answers {
		a := a.(map[string]any)
		require.Equal(t, float64(http.StatusOK), a["status"], "every account executed on the resend: %v", a)
	}
	for name, f := range fakes {
		orders := f.Orders()
		require.Len(t, orders, 1, "%s: one order at its venue", name)
		if id, ok := held[name]; ok {
			require.Equal(t, id, orders[0].ClientOrderID, "%s: the order the dead process placed was adopted", name)
		}
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE exchange = $1 AND client_order_id = $2", name, orders[0].ClientOrderID),
			"%s: one row, for the venue's order", name)
	}
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, len(held), apptest.Count(t, pool, "SELECT count(*) FROM trace_events WHERE event = 'dispatched' AND detail->>'adopted' = 'true'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"))
	for name, f := range fakes {
		require.Len(t, f.Orders(), 1, "%s: nothing placed twice", name)
	}
	require.Equal(t, 3, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
}
