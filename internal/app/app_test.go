package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
)

func TestDuplicateAnswers409WithTheFirstOrder(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	cases := []struct {
		name    string
		body    string
		headers []string
		prefix  string
	}{
		{"client key in body", apptest.Signal(`"trace_id":"alert-1"`), nil, "k:alert-1"},
		{"Idempotency-Key header", apptest.Signal(`"symbol":"ETHUSDT"`), []string{"Idempotency-Key", "hdr-1"}, "k:hdr-1"},
		{"derived from timestamp", apptest.Signal(`"symbol":"SOLUSDT","timestamp":"2026-11-29T10:00:00Z"`), nil, "d:"},
		{"sliding window", apptest.Signal(`"symbol":"ADAUSDT"`), nil, "w:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			first := apptest.Post(t, b.URL, tc.body, tc.headers...)
			require.Equal(t, http.StatusOK, first.Status, first.Raw)
			require.True(t, strings.HasPrefix(first.Str("trace_id"), tc.prefix), first.Raw)
			require.Equal(t, "dispatched", first.Str("status"))
			require.Equal(t, "filled", first.Str("order", "status"))
			orderID := first.Str("order", "id")
			require.NotEmpty(t, orderID)

			again := apptest.Post(t, b.URL, tc.body, tc.headers...)
			require.Equal(t, http.StatusConflict, again.Status, again.Raw)
			require.Equal(t, "application/problem+json", again.Header.Get("Content-Type"))
			require.Equal(t, "duplicate", again.Str("code"))
			require.Equal(t, first.Str("trace_id"), again.Str("trace_id"))
			require.Equal(t, orderID, again.Str("original", "order_id"))
			require.Equal(t, "dispatched", again.Str("original", "status"))
			require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders WHERE trace_id = $1", first.Str("trace_id")))
		})
	}
	require.Equal(t, len(cases), apptest.Fills(t, b.Pool))
	// A repeat's audit row commits just after its answer.
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE event = 'duplicate'") == len(cases)
	}, 10*time.Second, 10*time.Millisecond)
}

func TestKeyReuseIs422AndPlacesNothing(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	first := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"reuse-1"`))
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	other := apptest.Post(t, b.URL, strings.Replace(apptest.Signal(`"trace_id":"reuse-1"`), `"0.5"`, `"0.7"`, 1))
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, other.Raw)
	require.Equal(t, "key_reused", other.Str("code"))
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE event = 'key_reused'") == 1
	}, 10*time.Second, 10*time.Millisecond)
}

func TestConcurrentIdenticalSignalsPlaceOneOrder(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	const n = 500
	results := apptest.Storm(t, []string{b.URL}, apptest.Signal(`"trace_id":"storm-1"`), n)
	apptest.RequireOneWinner(t, results, n)
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
}

func TestStormAcrossThreeServersPlacesOneOrder(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	c := apptest.Start(t, b.DBURL)
	d := apptest.Start(t, b.DBURL)
	const n = 300
	results := apptest.Storm(t, []string{b.URL, c.URL, d.URL}, apptest.Signal(`"trace_id":"storm-3"`), n)
	apptest.RequireOneWinner(t, results, n)
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
}

func TestRestartedServerRemembersClaims(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	first := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"before-restart"`))
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	b.App.Close(context.Background())

	c := apptest.Start(t, b.DBURL)
	again := apptest.Post(t, c.URL, apptest.Signal(`"trace_id":"before-restart"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, first.Str("order", "id"), again.Str("original", "order_id"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
}

func TestUnreachableVenueRollsBackSoTheRetryExecutes(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	b.App.Paper().SetFaults(paper.Faults{Unreachable: true})
	down := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusServiceUnavailable, down.Status, down.Raw)
	require.Equal(t, "unavailable", down.Str("code"))
	require.NotEmpty(t, down.Header.Get("Retry-After"))
	require.Equal(t, 0, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids"))

	b.App.Paper().SetFaults(paper.Faults{})
	retry := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusOK, retry.Status, retry.Raw)
	again := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"venue-down"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders"))
}

func TestLiveAndTestSignalsWithTheSameKeyDoNotCollide(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	live := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"same-key"`))
	require.Equal(t, http.StatusOK, live.Status, live.Raw)
	paperTest := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"same-key","test":true`))
	require.Equal(t, http.StatusOK, paperTest.Status, paperTest.Raw)
	require.Equal(t, "k:same-key", live.Str("trace_id"))
	require.Equal(t, "test:k:same-key", paperTest.Str("trace_id"))
	require.NotEqual(t, live.Str("order", "client_order_id"), paperTest.Str("order", "client_order_id"))
	require.Equal(t, 2, apptest.Fills(t, b.Pool))
}

func TestRejectedOrderIs422AndKeepsTheTrace(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	r := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"bad-symbol","symbol":"INVALIDXYZ"`))
	require.Equal(t, http.StatusUnprocessableEntity, r.Status, r.Raw)
	require.Equal(t, "order_rejected", r.Str("code"))
	require.Equal(t, "rejected", r.Str("order", "status"))
	require.Equal(t, "rejected", apptest.Text(t, b.Pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:bad-symbol'"))
	again := apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"bad-symbol","symbol":"INVALIDXYZ"`))
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "rejected", again.Str("original", "status"))
	require.Equal(t, 0, apptest.Fills(t, b.Pool))
}

func TestSecretNeverReachesRowsOrLogs(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	require.Equal(t, http.StatusOK, apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"s-1"`)).Status)
	require.Equal(t, http.StatusConflict, apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"s-1"`)).Status)
	require.Equal(t, http.StatusUnprocessableEntity, apptest.Post(t, b.URL, apptest.Signal(`"trace_id":"s-2","symbol":"INVALID1"`)).Status)
	wrong := apptest.Post(t, b.URL, strings.Replace(apptest.Signal(`"trace_id":"s-3"`), apptest.Secret, apptest.Secret+"x", 1))
	require.Equal(t, http.StatusUnauthorized, wrong.Status, wrong.Raw)
	aliased := strings.Replace(apptest.Signal(`"trace_id":"s-4"`), `"secret"`, `"apiKey"`, 1)
	require.Equal(t, http.StatusOK, apptest.Post(t, b.URL, aliased).Status)
	// Admin traffic: right token, wrong token, a token in the query string.
	const token = "admin-token-91b2"
	for _, h := range []string{"Bearer " + token, "Bearer " + token + "x", ""} {
		req, err := http.NewRequest(http.MethodGet, b.URL+"/admin/traces/k:s-1?token="+token, nil)
		require.NoError(t, err)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := apptest.Client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
	}
	req, err := http.NewRequest(http.MethodPut, b.URL+"/admin/kill-switch", strings.NewReader(`{"engaged":false,"reason":"drill"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := apptest.Client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Every text column of every hoox table, dumped as JSON.
	var dump string
	require.NoError(t, b.Pool.QueryRow(context.Background(), `
		SELECT concat_ws(' ',
			(SELECT json_agg(t) FROM trace_ids t), (SELECT json_agg(o) FROM orders o),
			(SELECT json_agg(e) FROM trace_history e), (SELECT json_agg(s) FROM settings s),
			(SELECT json_agg(p) FROM paper_orders p), (SELECT json_agg(j) FROM river_job j))`).Scan(&dump))
	require.Contains(t, dump, "s-1", "the dump holds the traces")
	require.Contains(t, dump, "drill", "the dump holds the admin's audit")
	require.NotContains(t, dump, apptest.Secret)
	require.NotContains(t, dump, token)
	logs := b.Logs.String()
	require.Contains(t, logs, "/webhook", "requests were logged")
	require.Contains(t, logs, "/admin/traces", "admin requests were logged")
	require.NotContains(t, logs, apptest.Secret)
	require.NotContains(t, logs, token)
}

func TestQuantitiesAndPricesAreExact(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	body := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"ETHUSDT","action":"buy","trace_id":"exact-1",`+
		`"quantity":12345678901234567890.123456789012345678,"price":"0.000000000000000001","order_type":"market"}`, apptest.Secret)
	r := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "12345678901234567890.123456789012345678", r.Str("order", "quantity"))
	require.Equal(t, "0.000000000000000001", r.Str("order", "price"))
	require.Equal(t, "12345678901234567890.123456789012345678", apptest.Text(t, b.Pool, "SELECT quantity::text FROM orders"))
	require.Equal(t, "0.000000000000000001", apptest.Text(t, b.Pool, "SELECT trim_scale(price)::text FROM orders"))
	require.Equal(t, "12345678901234567890.123456789012345678", apptest.Text(t, b.Pool, "SELECT quantity::text FROM paper_orders"))
	require.Equal(t, "0.000000000000000001", apptest.Text(t, b.Pool, "SELECT trim_scale(fill_price)::text FROM paper_orders"))
}

// A trace blocks repeats for HOOX_TRACE_TTL; once the purge has removed it,
// the same signal executes again, and the audit trail shows both executions.
func TestExpiredTraceIsPurgedAndTheSignalExecutesAgain(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t, func(c *app.Config) {
		// The shortest TTL hoox accepts: the dedup window fits inside it,
		// twice the signal age inside the window, and the age counts whole
		// seconds.
		c.Timing.TraceTTL, c.Gateway.DedupWindow, c.Timing.MaxSignalAge = 2*time.Second, 2*time.Second, time.Second
		c.Jobs.PurgeInterval = time.Second
	})
	body := apptest.Signal(`"trace_id":"ttl-1"`)
	first := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)

	// The periodic purge (River's leader, in this process) removes it
	// without anyone asking.
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:ttl-1'") == 0
	}, 30*time.Second, 20*time.Millisecond)

	again := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	require.NotEqual(t, first.Str("order", "client_order_id"), again.Str("order", "client_order_id"),
		"a second execution gets its own client order ID")
	require.Equal(t, 2, apptest.Fills(t, b.Pool))

	rows, err := b.Pool.Query(context.Background(),
		"SELECT event FROM trace_history WHERE trace_id = 'k:ttl-1' AND event <> 'dispatch_started' ORDER BY at, id")
	require.NoError(t, err)
	events, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Equal(t, []string{"received", "dispatched", "purged", "received", "dispatched"}, events)
}

// Without a key or a timestamp, the same signal inside HOOX_DEDUP_WINDOW is
// a duplicate; once the first is older than the window, it executes again.
func TestSlidingWindowExpires(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	body := apptest.Signal(`"symbol":"XRPUSDT"`)
	first := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusOK, first.Status, first.Raw)
	require.Equal(t, http.StatusConflict, apptest.Post(t, b.URL, body).Status)

	// Age the first claim past the 60 s window instead of waiting a minute.
	_, err := b.Pool.Exec(context.Background(),
		"UPDATE trace_ids SET received_at = received_at - interval '61 seconds' WHERE trace_id = $1", first.Str("trace_id"))
	require.NoError(t, err)
	again := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusOK, again.Status, again.Raw)
	require.NotEqual(t, first.Str("trace_id"), again.Str("trace_id"))
	require.True(t, strings.HasPrefix(again.Str("trace_id"), "w:"))
	require.Equal(t, 2, apptest.Fills(t, b.Pool))
}
