package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// The trace page shows an order's attached exits under "Attached exits",
// and shows no such table for an order without them.
func TestUITracePageShowsAttachedExits(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	sig := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.01","price":"100","order_type":"market","take_profit":"104.5","stop_loss":"2%%","trace_id":"exits"}`, webhookSecret)
	sent := do(t, b.handler, http.MethodPost, "/webhook", "", sig)
	require.Equal(t, http.StatusOK, sent.Status, string(sent.Body))

	page := string(br.get("/ui/trace/k:exits").Body)
	require.Contains(t, page, `<table id="attached">`)
	for _, want := range []string{"take_profit", "104.5", "stop_loss", "98", "placed"} {
		require.Contains(t, page, want)
	}

	// A trailing stop placed as its own order (Binance USDⓈ-M) shows the
	// rate it trails by instead of a trigger price.
	_, err := b.pool.Exec(t.Context(), `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, exchange_order_id, role, callback_rate)
		SELECT gen_random_uuid(), trace_id, 'hxtrailingleg', exchange, symbol, 'close', 'sell', 'market', quantity, mode, 'open', '77',
		       'trailing_stop', 1.5
		FROM orders WHERE trace_id = 'k:exits'`)
	require.NoError(t, err)
	page = string(br.get("/ui/trace/k:exits").Body)
	require.Contains(t, page, "trails 1.5 %")
	require.Contains(t, page, "hxtrailingleg")

	// A Bybit trailing stop (the position's setting, a price distance)
	// that ended with its position.
	_, err = b.pool.Exec(t.Context(), `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, role, trailing_distance)
		SELECT gen_random_uuid(), trace_id, 'hxbybittrailing', exchange, symbol, 'close', 'sell', 'market', quantity, mode, 'expired',
		       'trailing_stop', 600
		FROM orders WHERE trace_id = 'k:exits' AND role = 'primary'`)
	require.NoError(t, err)
	page = string(br.get("/ui/trace/k:exits").Body)
	require.Contains(t, page, "trails by 600")
	require.Contains(t, page, "s-ended")

	// An OCO list followed to its end shows which exit executed.
	_, err = b.pool.Exec(t.Context(), `INSERT INTO orders (id, trace_id, client_order_id, exchange, symbol, action, side, order_type,
		quantity, mode, status, exchange_order_id, role, take_profit, stop_loss, executed_exit, filled_quantity, final_at)
		SELECT gen_random_uuid(), trace_id, 'hxocoleg', exchange, symbol, 'close', 'sell', 'market', quantity, mode, 'filled', '78',
		       'oco', 120, 90, 'take_profit', quantity, now()
		FROM orders WHERE trace_id = 'k:exits' AND role = 'primary'`)
	require.NoError(t, err)
	page = string(br.get("/ui/trace/k:exits").Body)
	require.Contains(t, page, `<code>hxocoleg</code></td><td>take_profit</td><td>120</td><td><span class="status s-filled">filled</span>`)
	require.Contains(t, page, `<code>hxocoleg</code></td><td>stop_loss</td><td>90</td><td><span class="status s-cancelled">cancelled</span>`)

	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "plain").Status)
	require.NotContains(t, string(br.get("/ui/trace/k:plain").Body), `<table id="attached">`)
}
