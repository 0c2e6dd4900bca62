package main

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// An entry with an attached take-profit and stop-loss (in percent), on
// each venue that takes them on the order itself: `hoox serve` is killed
// with -9 between the venue's answer and the commit, the price then
// moves, and the sender resends. The venue holds one order carrying the
// exits; the resend adopts it — its lookup compares the exits with those
// resolved before the crash and stored in the intent (the percent is not
// taken again from the moved price, which would be another order) — and
// records it once, exits included.
func TestVenueCrashDrillEntryWithAttachedExits(t *testing.T) {
	t.Parallel()
	// The fakes' last prices: BTCUSDT 60000 (tick 0.1), ETHUSDT 3000
	// (okx-swap tick 0.01); take-profit 2 % above, stop-loss 3 % below.
	// (okx and bybit-spot refuse exits on a spot entry.)
	want := map[string][2]string{"bybit": {"61200", "58200"}, "okx-swap": {"3060", "2910"}}
	for _, vc := range venueCases {
		exits, ok := want[vc.name]
		if !ok {
			continue
		}
		t.Run(vc.name, func(t *testing.T) {
			t.Parallel()
			fake := vc.newFake(t)
			dbURL := pgtest.NewDatabase(t)
			pool := pgtest.OpenPool(t, dbURL)
			env := vc.envFor(fake)
			body := vc.signal(`"trace_id":"tpsl-crash-1","take_profit":{"percent":2},"stop_loss":"3%"`)

			held := crashAfterVenue(t, dbURL, env, body, fake)
			require.Equal(t, exits[0], held.TakeProfit.String(), "the order went out with its exits")
			require.Equal(t, exits[1], held.StopLoss.String())

			moved := decimal.RequireFromString(exits[0]) // the price rose to the take-profit's level
			fake.SetPrice(vc.symbol, moved.Sub(decimal.RequireFromString("1")))
			survivor, _ := startVenueServe(t, dbURL, env...)
			r := apptest.Post(t, survivor.url, body)
			require.Equal(t, http.StatusOK, r.Status, r.Raw)
			require.Len(t, fake.Orders(), 1, "the resend adopted the order instead of placing another")
			require.Equal(t, held.ClientOrderID, r.Str("order", "client_order_id"))
			attached, _ := r.Body["attached"].([]any)
			require.Equal(t, []any{
				map[string]any{"role": "take_profit", "trigger_price": exits[0], "status": "placed"},
				map[string]any{"role": "stop_loss", "trigger_price": exits[1], "status": "placed"},
			}, attached)
			require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
			require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE take_profit = $1 AND stop_loss = $2", exits[0], exits[1]))
			require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:tpsl-crash-1' AND event = 'dispatched' AND detail->>'adopted' = 'true'"))

			again := apptest.Post(t, survivor.url, body)
			require.Equal(t, http.StatusConflict, again.Status, again.Raw)
			require.Len(t, fake.Orders(), 1)
		})
	}
}
