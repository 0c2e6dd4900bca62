package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
)

func TestSignatureReplacesTheSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := `{"exchange":"paper","symbol":"ETHUSDT","action":"sell","quantity":"1.5","trace_id":"signed-1"}`
	mac := hmac.New(sha256.New, []byte(testSecret))
	mac.Write([]byte(body))
	r := post(t, b.url, body, "X-Hoox-Signature", hex.EncodeToString(mac.Sum(nil)))
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, "1.5", r.str("order", "quantity"))

	tampered := `{"exchange":"paper","symbol":"ETHUSDT","action":"sell","quantity":"15","trace_id":"signed-1"}`
	r = post(t, b.url, tampered, "X-Hoox-Signature", hex.EncodeToString(mac.Sum(nil)))
	require.Equal(t, http.StatusUnauthorized, r.Status, r.Raw)
}

func TestAllowedIPsAndTrustedProxies(t *testing.T) {
	t.Parallel()
	tradingView, err := api.ParseIPList("tradingview")
	require.NoError(t, err)
	direct := setup(t, func(c *Config) { c.API.AllowedIPs = tradingView })
	r := post(t, direct.url, sig(`"trace_id":"ip-1"`))
	require.Equal(t, http.StatusForbidden, r.Status, r.Raw)
	require.Equal(t, "forbidden", r.str("code"))
	r = post(t, direct.url, sig(`"trace_id":"ip-1"`), "X-Forwarded-For", "52.89.214.238")
	require.Equal(t, http.StatusForbidden, r.Status, "X-Forwarded-For from an untrusted peer is ignored: %s", r.Raw)

	proxied := setup(t, func(c *Config) {
		c.API.AllowedIPs = tradingView
		c.API.TrustedProxies = api.IPList{netip.MustParsePrefix("127.0.0.0/8")}
	})
	r = post(t, proxied.url, sig(`"trace_id":"ip-2"`), "X-Forwarded-For", "52.89.214.238")
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	r = post(t, proxied.url, sig(`"trace_id":"ip-3"`), "X-Forwarded-For", "52.89.214.238, 203.0.113.9")
	require.Equal(t, http.StatusForbidden, r.Status, "the rightmost untrusted hop is the sender: %s", r.Raw)
	require.Equal(t, 1, count(t, proxied.pool, "SELECT count(*) FROM trace_ids"))
	var ip string
	require.NoError(t, proxied.pool.QueryRow(context.Background(), "SELECT host(source_ip) FROM trace_ids").Scan(&ip))
	require.Equal(t, "52.89.214.238", ip)
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.API.RateLimit = 0.001; c.API.RateBurst = 1 })
	require.Equal(t, http.StatusOK, post(t, b.url, sig(`"trace_id":"rl-1"`)).Status)
	r := post(t, b.url, sig(`"trace_id":"rl-2"`))
	require.Equal(t, http.StatusTooManyRequests, r.Status, r.Raw)
	require.Equal(t, "rate_limited", r.str("code"))
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
}

func TestKillSwitchHaltsEveryReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := startBundle(t, b.dbURL)
	setKillSwitch := func(engaged bool) {
		body := fmt.Sprintf(`{"engaged":%t,"reason":"drill"}`, engaged)
		req, err := http.NewRequest(http.MethodPut, b.url+"/admin/kill-switch", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer admin-token-91b2")
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	setKillSwitch(true)                              // through one replica …
	for _, url := range []string{other.url, b.url} { // … halts every replica
		r := post(t, url, sig(`"trace_id":"halted"`))
		require.Equal(t, http.StatusServiceUnavailable, r.Status, r.Raw)
		require.Equal(t, "kill_switch", r.str("code"))
		require.NotEmpty(t, r.Header.Get("Retry-After"))
	}
	require.Equal(t, 0, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
	require.Equal(t, 0, fills(t, b.pool))

	setKillSwitch(false)
	require.Equal(t, http.StatusOK, post(t, other.url, sig(`"trace_id":"halted"`)).Status)
	require.Equal(t, 2, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE event LIKE 'kill_switch_%'"), "both changes are audited")
}

func TestMetricsExposeRuntimeRequestsAndOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	require.Equal(t, http.StatusOK, post(t, b.url, sig(`"trace_id":"m-1"`)).Status)
	require.Equal(t, http.StatusConflict, post(t, b.url, sig(`"trace_id":"m-1"`)).Status)
	resp, err := client.Get(b.url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	body := string(raw)
	for _, want := range []string{
		"go_goroutines ",
		`hoox_http_request_duration_seconds_count{method="POST",route="/webhook",status="200"} 1`,
		`hoox_http_request_duration_seconds_count{method="POST",route="/webhook",status="409"} 1`,
		`hoox_signals_total{outcome="dispatched"} 1`,
		`hoox_signals_total{outcome="duplicate"} 1`,
		"hoox_claim_seconds_count 2",
		"hoox_dispatch_seconds_count 1",
		`hoox_purged_rows_total{table="trace_ids"} 0`,
		`hoox_river_job_failures_total{kind="reconcile"} 0`,
		`hoox_reconciles_total{outcome="stale"} 0`,
	} {
		require.Contains(t, body, want)
	}
}
