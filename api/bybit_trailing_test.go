package api_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
)

// Through POST /webhook against the Bybit fake: a long with a 1 % trailing
// stop answers 200 with the entry, and the trailing stop — set once on the
// position, 600 from the 60000 fill — in attached (role trailing_stop, its
// trailing_distance, no trigger price) and in orders; the resend is a 409
// that sets nothing. A trailing stop beside a stop-loss is a problem+json
// 422 unsupported, and nothing is claimed or sent.
func TestWebhookBybitTrailingStopIsSetOnceAndShown(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dsn)
	fake := bybitfake.New(t, bybitfake.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	venue, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: fake.APIKey(), APISecret: fake.APISecret(),
		BaseURL: fake.URL, HTTPClient: &http.Client{Transport: tr}})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": venue})
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, dsn), Venues: venues})
	t.Cleanup(gw.Close)
	b := &webhookBundle{handler: api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Gateway: gw, Venues: venues}).Handler()}
	body := func(extra string) string {
		return fmt.Sprintf(`{"secret":%q,"exchange":"bybit","symbol":"BTCUSDT","action":"long","quantity":"0.01",%s}`, webhookSecret, extra)
	}

	r := b.post(t, webhookRequest{body: body(`"trailing_stop":{"percent":1},"trace_id":"wh-trail"`)})
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	m := r.json(t)
	leg := m["orders"].([]any)[1].(map[string]any)
	require.Equal(t, "trailing_stop", leg["role"])
	require.Equal(t, []any{map[string]any{"role": "trailing_stop", "trailing_distance": "600", "status": "placed",
		"client_order_id": leg["client_order_id"]}}, m["attached"], string(r.Body))
	require.Equal(t, "600", fake.TrailingStop("BTCUSDT").String())

	again := b.post(t, webhookRequest{body: body(`"trailing_stop":{"percent":1},"trace_id":"wh-trail"`)})
	require.Equal(t, http.StatusConflict, again.Status, string(again.Body))
	require.Equal(t, 1, fake.Requests(bybitfake.PathTradingStop), "set once")
	require.Len(t, fake.Orders(), 1, "one entry")

	refused := b.post(t, webhookRequest{body: body(`"trailing_stop":{"percent":1},"stop_loss":"59000","trace_id":"wh-trail-sl"`)})
	require.Equal(t, http.StatusUnprocessableEntity, refused.Status, string(refused.Body))
	p := refused.problem(t)
	require.Equal(t, "unsupported", p["code"])
	require.Equal(t, bybit.ReasonTrailingWithTPSL, p["detail"])
	var traces int
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM trace_ids WHERE trace_id = 'k:wh-trail-sl'`).Scan(&traces))
	require.Zero(t, traces, "nothing claimed")
	require.Len(t, fake.Orders(), 1, "nothing sent")
	require.Equal(t, 1, fake.Requests(bybitfake.PathTradingStop))
}
