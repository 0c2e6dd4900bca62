package app_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
)

// Through /webhook, a Binance spot buy with only a stop-loss, then one
// with only a take-profit: each answer is 200 and shows its one exit in
// "attached" (role, trigger, placed, with the exit order's own client
// order ID and Binance's order ID); Binance holds the entry and one sell
// order per signal — a STOP_LOSS, a LIMIT_MAKER — and a resend is a 409
// that places nothing more.
func TestWebhookBinanceSpotLoneStopLossAndTakeProfit(t *testing.T) {
	t.Parallel()
	fake := binancefake.New(t, binancefake.Options{})
	b := apptest.Setup(t, func(c *app.Config) {
		*c.Venue("binance") = app.VenueSettings{APIKey: fake.APIKey(), APISecret: fake.APISecret(), BaseURL: fake.URL}
	})
	for _, tc := range []struct{ trace, exit, role, trigger, typ string }{
		{"wh-lone-sl", `"stop_loss":"2850"`, "stop_loss", "2850", "STOP_LOSS"},
		{"wh-lone-tp", `"take_profit":{"percent":5}`, "take_profit", "3150", "LIMIT_MAKER"},
	} {
		body := `{"secret":"` + apptest.Secret + `","exchange":"binance","symbol":"ETHUSDT","action":"buy","quantity":"1",` +
			tc.exit + `,"trace_id":"` + tc.trace + `"}`
		before := len(fake.Orders())
		r := apptest.Post(t, b.URL, body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		held := fake.Orders()[before:]
		require.Len(t, held, 2, "%s: the entry and one exit order", tc.trace)
		exit := held[1]
		require.Equal(t, tc.typ, exit.Type)
		require.Equal(t, "SELL", exit.Side)
		require.Equal(t, "NEW", exit.Status, "resting at Binance")

		attached, _ := r.Body["attached"].([]any)
		require.Len(t, attached, 1, r.Raw)
		a := attached[0].(map[string]any)
		require.Equal(t, tc.role, a["role"], r.Raw)
		require.Equal(t, tc.trigger, a["trigger_price"], r.Raw)
		require.Equal(t, "placed", a["status"], r.Raw)
		require.Equal(t, exit.ClientOrderID, a["client_order_id"], r.Raw)
		require.NotEmpty(t, a["exchange_order_id"], r.Raw)

		again := apptest.Post(t, b.URL, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Len(t, fake.Orders(), before+2, "%s: placed once", tc.trace)
		require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:"+tc.trace+"' AND role = '"+tc.role+"' AND status = 'open'"))
	}
}
