package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// The README's "Binance USDⓈ-M entry protected by a 1.5 % trailing stop and
// a 3 % stop-loss" template uses {{strategy.order.action}}, which only a
// strategy alert renders, and a strategy alert fires on every order fill,
// exits included. The long strategy's own exit renders {"action": "sell",
// "quantity": <the position>, "trailing_stop": …, "stop_loss": "3%"}: hoox
// reads it as a short entry with exits. It closes the long, and places no
// exit: the sell opened no short for them to protect, and two reduce-only
// BUY stops resting on the flat position would close (part of) a later
// short and fill the symbol's algo-order cap — nor does the cap, full with
// the long's own exits, refuse the exit. The answer says why.
func TestReadmeTrailingTemplateExitPlacesNoExits(t *testing.T) {
	t.Parallel()
	r := startExitCapRig(t)
	// Room for the long's two exits only: the exit's would not fit, and
	// must not stand in the way of the strategy's exit.
	r.fake.SetMaxNumAlgoOrders("BTCUSDT", 2)
	tmpl := readmeTemplate(t, `"exchange": "binance-futures"`, `"trailing_stop": {"percent": 1.5}`)
	fire := func(action string, at time.Time) apptest.Reply {
		return apptest.Post(t, r.b.URL, renderAlert(tmpl, map[string]string{
			"ticker":                   "BTCUSDT.P",
			"strategy.order.action":    action,
			"strategy.order.contracts": "0.01",
			"timenow":                  at.UTC().Format(time.RFC3339),
		}))
	}
	now := time.Now()
	entry := fire("buy", now)
	require.Equal(t, http.StatusOK, entry.Status, entry.Raw)
	require.True(t, r.fake.Position("BTCUSDT").IsPositive(), "long")
	require.Len(t, r.fake.AlgoOrders(), 2, "the long's stop-loss and trailing stop")

	exit := fire("sell", now.Add(time.Minute))
	require.Equal(t, http.StatusOK, exit.Status, exit.Raw)
	require.True(t, r.fake.Position("BTCUSDT").IsZero(), "the strategy's exit flattened the long")
	for _, a := range r.fake.AlgoOrders() {
		require.False(t, a.Side == "BUY" && a.Status == "NEW",
			"the long's exit left a resting %s %s %s on a flat position (exit answer %s)", a.Side, a.Type, a.Quantity, exit.Raw)
	}
	require.Contains(t, exit.Raw, "only reduced it and opened no short position", "the answer says why the exits were not placed")
}
