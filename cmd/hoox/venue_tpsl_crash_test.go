package main

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// An entry with an attached take-profit (in percent) and stop-loss, on
// Bybit linear, which takes them on the order itself: `hoox serve` is
// killed with -9 between the venue's answer and the commit, the price then
// moves, and the sender resends. The venue holds one order carrying the
// exits; the resend adopts it — its lookup compares the exits with those
// resolved before the crash and stored in the intent (the percent is not
// taken again from the moved price, which would be another order) — and
// records it once, exits included.
func TestVenueCrashDrillEntryWithAttachedExits(t *testing.T) {
	t.Parallel()
	var vc venueCase
	for _, c := range venueCases {
		if c.name == "bybit" {
			vc = c
		}
	}
	require.Equal(t, "bybit", vc.name, "the registry has bybit")
	fake := vc.newFake(t)
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	env := vc.envFor(fake)
	// The fake's last price is 60000 (tick 0.10): 2 % above is 61200.
	body := vc.signal(`"trace_id":"tpsl-crash-1","take_profit":{"percent":2},"stop_loss":"58000"`)

	held := crashAfterVenue(t, dbURL, env, body, fake)
	require.Equal(t, "61200", held.TakeProfit.String(), "the order went out with its exits")
	require.Equal(t, "58000", held.StopLoss.String())

	fake.SetPrice(vc.symbol, decimal.RequireFromString("60500"))
	survivor, _ := startVenueServe(t, dbURL, env...)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Len(t, fake.Orders(), 1, "the resend adopted the order instead of placing another")
	require.Equal(t, held.ClientOrderID, r.Str("order", "client_order_id"))
	attached, _ := r.Body["attached"].([]any)
	require.Equal(t, []any{
		map[string]any{"role": "take_profit", "trigger_price": "61200", "status": "placed"},
		map[string]any{"role": "stop_loss", "trigger_price": "58000", "status": "placed"},
	}, attached)
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE take_profit = 61200 AND stop_loss = 58000"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_events WHERE trace_id = 'k:tpsl-crash-1' AND event = 'dispatched' AND detail->>'adopted' = 'true'"))

	again := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Len(t, fake.Orders(), 1)
}
