package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
)

// A database nobody listens on: a refused setting must stop hoox before it
// dials anything, so these tests need no Postgres.
const unreachableDB = "postgres://hoox@127.0.0.1:1/hoox?connect_timeout=1"

func TestUnsafeSettingsAreRefusedAtStartNamingTheVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		says []string
	}{
		{map[string]string{"HOOX_LOCK_WAIT": "0"}, []string{"HOOX_LOCK_WAIT=0s", "between 1ms and 2.5s", "wait forever"}},
		{map[string]string{"HOOX_LOCK_WAIT": "500us"}, []string{"HOOX_LOCK_WAIT=500µs", "wait forever"}},
		{map[string]string{"HOOX_LOCK_WAIT": "5s"}, []string{"HOOX_LOCK_WAIT=5s", "TradingView"}},
		{map[string]string{"HOOX_TRACE_TTL": "0"}, []string{"HOOX_TRACE_TTL=0s", "at least 1ms"}},
		{map[string]string{"HOOX_VENUE_TIMEOUT": "0"}, []string{"HOOX_VENUE_TIMEOUT=0s", "lost"}},
		{map[string]string{"HOOX_DEDUP_WINDOW": "-1s"}, []string{"HOOX_DEDUP_WINDOW=-1s", "at least 1ms"}},
		{map[string]string{"HOOX_DEDUP_WINDOW": "48h"}, []string{"HOOX_DEDUP_WINDOW=48h0m0s", "trace TTL (24h0m0s)"}},
		{map[string]string{"HOOX_TRACE_TTL": "1h", "HOOX_DEDUP_WINDOW": "2h"}, []string{"HOOX_DEDUP_WINDOW=2h0m0s", "trace TTL (1h0m0s)"}},
		{map[string]string{"HOOX_PURGE_INTERVAL": "500ms"}, []string{"HOOX_PURGE_INTERVAL=500ms", "once a second"}},
		{map[string]string{"HOOX_PURGE_BATCH": "0"}, []string{"HOOX_PURGE_BATCH=0", "at least 1"}},
		{map[string]string{"HOOX_MAX_SIGNAL_AGE": "0"}, []string{"HOOX_MAX_SIGNAL_AGE=0s"}},
		{map[string]string{"HOOX_MAX_SIGNAL_AGE": "2m"}, []string{"HOOX_MAX_SIGNAL_AGE=2m0s", "HOOX_DEDUP_WINDOW (1m0s)", "replayed"}},
		// Accepted from 31 s before to 31 s after its stamp, a signed
		// request and its replay may arrive 62 s apart: past the window.
		{map[string]string{"HOOX_MAX_SIGNAL_AGE": "31s"}, []string{"HOOX_MAX_SIGNAL_AGE=31s", "half of HOOX_DEDUP_WINDOW (1m0s)", "replayed"}},
		{map[string]string{"HOOX_MAX_SIGNAL_AGE": "1m"}, []string{"HOOX_MAX_SIGNAL_AGE=1m0s", "half of HOOX_DEDUP_WINDOW (1m0s)"}},
		{map[string]string{"HOOX_MAX_SIGNAL_AGE": "500ms"}, []string{"HOOX_MAX_SIGNAL_AGE=500ms", "whole seconds"}},
		{map[string]string{"HOOX_SHUTDOWN_WAIT": "0"}, []string{"HOOX_SHUTDOWN_WAIT=0s"}},
		{map[string]string{"HOOX_AUDIT_RETENTION": "1h"}, []string{"HOOX_AUDIT_RETENTION=1h0m0s", "HOOX_TRACE_TTL (24h0m0s)"}},
		{map[string]string{"HOOX_AUDIT_RETENTION": "-1h"}, []string{"HOOX_AUDIT_RETENTION=-1h0m0s"}},
		{map[string]string{"HOOX_DB_MAX_CONNS": "1"}, []string{"HOOX_DB_MAX_CONNS=1", "at least 2"}},
		{map[string]string{"HOOX_DB_MAX_CONNS": "4"}, []string{"HOOX_RECONCILE_WORKERS=4", "half of the claim pool (4 of HOOX_DB_MAX_CONNS=4)"}},
		{map[string]string{"HOOX_RECONCILE_WORKERS": "0"}, []string{"HOOX_RECONCILE_WORKERS=0"}},
		{map[string]string{"HOOX_RECONCILE_LOCK_WAIT": "0"}, []string{"HOOX_RECONCILE_LOCK_WAIT=0s"}},
		{map[string]string{"HOOX_SWEEP_INTERVAL": "500ms"}, []string{"HOOX_SWEEP_INTERVAL=500ms", "once a second"}},
		{map[string]string{"HOOX_SWEEP_INTERVAL": "0"}, []string{"HOOX_SWEEP_INTERVAL=0s", "at least 1s"}},
		{map[string]string{"HOOX_SWEEP_GRACE": "0"}, []string{"HOOX_SWEEP_GRACE=0s", "at least 1ms", "live attempt"}},
		{map[string]string{"HOOX_SWEEP_GRACE": "-30s"}, []string{"HOOX_SWEEP_GRACE=-30s", "live attempt"}},
		{map[string]string{"HOOX_UI_SESSION_IDLE": "30s"}, []string{"HOOX_UI_SESSION_IDLE=30s", "at least 1m0s", "polling"}},
		{map[string]string{"HOOX_UI_SESSION_IDLE": "0"}, []string{"HOOX_UI_SESSION_IDLE=0s", "at least 1m0s"}},
		{map[string]string{"HOOX_ADMIN_STATEMENT_TIMEOUT": "0"}, []string{"HOOX_ADMIN_STATEMENT_TIMEOUT=0s", "at least 1ms", "unbounded"}},
		{map[string]string{"HOOX_ADMIN_STATEMENT_TIMEOUT": "-5s"}, []string{"HOOX_ADMIN_STATEMENT_TIMEOUT=-5s", "at least 1ms"}},
		{map[string]string{"HOOX_TRANSACTION_POOLER": "true", "HOOX_DB_MAX_CONNS": "3"},
			[]string{"HOOX_DB_MAX_CONNS=3", "at least 4 with HOOX_TRANSACTION_POOLER"}},
		{map[string]string{"HOOX_RATE_LIMIT": "NaN"}, []string{"HOOX_RATE_LIMIT=NaN"}},
		{map[string]string{"HOOX_RATE_LIMIT": "-1"}, []string{"HOOX_RATE_LIMIT=-1"}},
		{map[string]string{"HOOX_RATE_LIMIT": "10", "HOOX_RATE_BURST": "0"}, []string{"HOOX_RATE_BURST=0", "every signal is refused"}},
		{map[string]string{"HOOX_BINANCE_API_KEY": "k-not-in-errors"}, []string{"HOOX_BINANCE_API_KEY is set but HOOX_BINANCE_API_SECRET is not"}},
		{map[string]string{"HOOX_BYBIT_SPOT_API_SECRET": "s3cret-venue"}, []string{"HOOX_BYBIT_SPOT_API_SECRET is set but HOOX_BYBIT_SPOT_API_KEY is not"}},
		{map[string]string{"HOOX_BINANCE_FUTURES_API_KEY": "k", "HOOX_BINANCE_FUTURES_API_SECRET": "s3cret-venue",
			"HOOX_BINANCE_FUTURES_TESTNET_API_KEY": "tk"}, []string{"HOOX_BINANCE_FUTURES_TESTNET_API_KEY is set but HOOX_BINANCE_FUTURES_TESTNET_API_SECRET is not"}},
		{map[string]string{"HOOX_OKX_API_KEY": "k", "HOOX_OKX_API_SECRET": "s3cret-venue"}, []string{"HOOX_OKX_API_KEY is set but HOOX_OKX_API_PASSPHRASE is not"}},
		{map[string]string{"HOOX_TELEGRAM_BOT_TOKEN": "123:s3cret"}, []string{"HOOX_TELEGRAM_CHAT_ID is required"}},
		{map[string]string{"HOOX_NOTIFY_EVENTS": "rejected,lunch"}, []string{"HOOX_NOTIFY_EVENTS"}},
		{map[string]string{"HOOX_WEBHOOK_SECRET": "s3cret"}, []string{"HOOX_WEBHOOK_SECRET must be at least 16 characters"}},
		{map[string]string{"HOOX_ADMIN_TOKEN": "s3cret-token"}, []string{"HOOX_ADMIN_TOKEN must be at least 16 characters"}},
		{map[string]string{"HOOX_ADMIN_TOKEN": " s3cret-admin-token-x "}, []string{"HOOX_ADMIN_TOKEN", "spaces"}},
	}
	for _, tt := range tests {
		var name []string
		for k, v := range tt.env {
			name = append(name, k+"="+v)
		}
		t.Run(strings.Join(name, ","), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": unreachableDB, "HOOX_WEBHOOK_SECRET": "s3cret-not-in-errors"}
			for k, v := range tt.env {
				env[k] = v
			}
			var stdout, stderr strings.Builder
			err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, &stdout, &stderr)
			require.Error(t, err)
			for _, want := range tt.says {
				require.Contains(t, err.Error(), want)
			}
			require.NotContains(t, err.Error(), "s3cret")
			require.NotContains(t, err.Error(), "k-not-in-errors")
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one refusal, one line: %s", err)
			require.Empty(t, stderr.String(), "refused before any log")
		})
	}
}

func TestConfigUISessionIdleReachesTheWebPage(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOX_UI_SESSION_IDLE": "2m"}
	cfg, _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, cfg.API.SessionIdle, "the api config the web page's sessions are made with")

	cfg, _, err = parseConfig("serve", nil, func(string) string { return "" }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, 8*time.Hour, cfg.API.SessionIdle, "unset keeps the 8 h default")
}

func TestConfigAdminStatementTimeoutReachesTheAdminAPI(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOX_ADMIN_STATEMENT_TIMEOUT": "5s"}
	cfg, _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, 5*time.Second, cfg.API.AdminStatementTimeout, "the api config the admin routes bound their statements with")

	cfg, _, err = parseConfig("serve", []string{"--admin-statement-timeout", "250ms"}, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, 250*time.Millisecond, cfg.API.AdminStatementTimeout, "the flag wins over the variable")

	cfg, _, err = parseConfig("serve", nil, func(string) string { return "" }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, cfg.API.AdminStatementTimeout, "unset keeps the 30 s default")

	env["HOOX_ADMIN_STATEMENT_TIMEOUT"] = "30"
	_, _, err = parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.ErrorContains(t, err, "HOOX_ADMIN_STATEMENT_TIMEOUT", "a number without a unit is not a duration")
}

func TestEveryRefusedSettingIsListed(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOX_LOCK_WAIT": "0", "HOOX_TRACE_TTL": "0", "HOOX_VENUE_TIMEOUT": "0"}
	_, _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.Error(t, err)
	for _, want := range []string{"3 settings refused", "HOOX_LOCK_WAIT=0s", "HOOX_TRACE_TTL=0s", "HOOX_VENUE_TIMEOUT=0s"} {
		require.Contains(t, err.Error(), want)
	}
	require.Equal(t, 1, strings.Count(err.Error(), "HOOX_VENUE_TIMEOUT"), "the gateway and the jobs both read it; it is named once: %s", err)
}

func TestEveryCommandRefusesUnsafeSettings(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": unreachableDB, "HOOX_LOCK_WAIT": "0"}
	for _, args := range [][]string{{"dev", "--data", t.TempDir()}, {"purge"}, {"migrate", "status"}} {
		err := run(context.Background(), args, func(k string) string { return env[k] }, io.Discard, io.Discard)
		require.ErrorContains(t, err, "HOOX_LOCK_WAIT=0s", "hoox %v", args)
	}
}

func TestRefusedSettingExitsTheProcess(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"DATABASE_URL=" + unreachableDB, "HOOX_WEBHOOK_SECRET=s3cret-long-enough", "HOOX_LOCK_WAIT=0", "PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, exit.ExitCode())
	require.Equal(t, "hoox: HOOX_LOCK_WAIT=0s: must be between 1ms and 2.5s; 0 would make Postgres wait forever for a held trace",
		strings.TrimSpace(string(out)))
}

var listening = regexp.MustCompile(`"msg":"hoox listening","addr":"([^"]+)"`)

func TestDefaultsStart(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": pgtest.NewDatabase(t), "HOOX_WEBHOOK_SECRET": "s3cret-long-enough", "HOOX_ADDR": "127.0.0.1:0"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &testutil.LogBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--no-migrate"}, func(k string) string { return env[k] }, io.Discard, logs)
	}()

	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		select {
		case err := <-done:
			t.Fatalf("serve returned %v before listening: %s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
		if m := listening.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		require.True(t, time.Now().Before(deadline), "serve is not listening: %s", logs)
	}
	resp, err := apptest.Client.Get("http://" + addr + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// --help lists every venue's variables, and never the value of a key or
// secret taken from the environment.
func TestHelpListsVenueSettingsWithoutValues(t *testing.T) {
	t.Parallel()
	env := map[string]string{"HOOX_BINANCE_API_KEY": "key-value-1234", "HOOX_BINANCE_API_SECRET": "secret-value-5678",
		"HOOX_TELEGRAM_BOT_TOKEN": "123:tg-token-9", "HOOX_TELEGRAM_CHAT_ID": "42", "HOOX_OKX_API_PASSPHRASE": "pass-phrase-4321"}
	var stdout strings.Builder
	_ = run(context.Background(), []string{"serve", "--help"}, func(k string) string { return env[k] }, &stdout, io.Discard)
	help := stdout.String()
	for _, v := range []string{"HOOX_BINANCE_API_KEY", "HOOX_BINANCE_FUTURES_API_SECRET", "HOOX_BYBIT_TESTNET", "HOOX_BYBIT_SPOT_TESTNET_API_KEY",
		"HOOX_OKX_API_PASSPHRASE", "HOOX_OKX_SWAP_BASE_URL", "HOOX_OKX_SWAP_TESTNET_API_PASSPHRASE",
		"HOOX_TELEGRAM_BOT_TOKEN", "HOOX_SLACK_WEBHOOK_URL", "HOOX_NOTIFY_EVENTS", "HOOX_SWEEP_INTERVAL", "HOOX_UI_SESSION_IDLE"} {
		require.Contains(t, help, v)
	}
	for _, secret := range []string{"key-value-1234", "secret-value-5678", "tg-token-9", "pass-phrase-4321"} {
		require.NotContains(t, help, secret)
	}
	require.NotContains(t, help, "HOOX_BINANCE_API_PASSPHRASE", "only venues whose keys have a passphrase list one")
}
