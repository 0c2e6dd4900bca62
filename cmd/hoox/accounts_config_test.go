package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// accountJSON is one account's JSON with credentials that must never be
// repeated anywhere.
func accountJSON(name, venue string, extra ...string) string {
	s := `{"name":"` + name + `","venue":"` + venue + `","api_key":"key-SECRETVALUE","api_secret":"sec-SECRETVALUE"`
	for _, e := range extra {
		s += "," + e
	}
	return s + "}"
}

func TestAccountsAreReadFromTheEnvironmentOrAFile(t *testing.T) {
	t.Parallel()
	list := "[" + accountJSON("main", "binance") + "," + accountJSON("sub1", "binance", `"testnet":true`) + "," +
		accountJSON("okx-sub", "okx", `"api_passphrase":"pp-SECRETVALUE"`, `"base_url":"http://127.0.0.1:1"`) + "," +
		`{"name":"paper2","venue":"paper"}` + "]"
	env := map[string]string{"HOOX_ACCOUNTS": list}
	cfg, _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Len(t, cfg.Accounts, 4)
	require.Equal(t, "sub1", cfg.Accounts[1].Name)
	require.True(t, cfg.Accounts[1].Testnet)
	require.Equal(t, "pp-SECRETVALUE", cfg.Accounts[2].APIPassphrase)
	require.Equal(t, "http://127.0.0.1:1", cfg.Accounts[2].BaseURL)
	require.NotContains(t, cfg.Accounts[2].String()+" "+cfg.Accounts[2].GoString(), "SECRETVALUE")

	path := filepath.Join(t.TempDir(), "accounts.json")
	require.NoError(t, os.WriteFile(path, []byte(list), 0o600))
	env = map[string]string{"HOOX_ACCOUNTS_FILE": path}
	fromFile, _, err := parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	require.Equal(t, cfg.Accounts, fromFile.Accounts)

	// The venue's own variables keep configuring its default account
	// beside the named ones.
	env = map[string]string{"HOOX_ACCOUNTS": list, "HOOX_BYBIT_API_KEY": "k", "HOOX_BYBIT_API_SECRET": "s"}
	_, _, err = parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
	// A venue's name names its default account when nothing else does.
	env = map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("bybit", "bybit") + "]"}
	_, _, err = parseConfig("serve", nil, func(k string) string { return env[k] }, io.Discard, nil)
	require.NoError(t, err)
}

func TestBadAccountsRefuseToStartWithoutPrintingASecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		env  map[string]string
		says []string
	}{
		{"not JSON", map[string]string{"HOOX_ACCOUNTS": `[{"name":"main","api_secret":"sec-SECRETVALUE"`}, []string{"HOOX_ACCOUNTS", "not valid JSON"}},
		{"not a list", map[string]string{"HOOX_ACCOUNTS": accountJSON("main", "binance")}, []string{"HOOX_ACCOUNTS", "must be a JSON list"}},
		{"a misspelt member", map[string]string{"HOOX_ACCOUNTS": `[{"name":"main","venue":"binance","api_key":"k","api_secet":"sec-SECRETVALUE"}]`},
			[]string{"HOOX_ACCOUNTS", `unknown member "api_secet"`}},
		{"a wrong type", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("main", "binance", `"testnet":"yes"`) + "]"}, []string{"HOOX_ACCOUNTS", `"testnet" must be a JSON boolean`}},
		{"a bad name", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("Main Account", "binance") + "]"}, []string{"HOOX_ACCOUNTS", `account "Main Account"`, "a-z, 0-9, _ and -"}},
		{"a name twice", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("main", "binance") + "," + accountJSON("main", "bybit") + "]"},
			[]string{"HOOX_ACCOUNTS", `account "main": is named twice`}},
		{"another venue's name", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("bybit", "binance") + "]"}, []string{`account "bybit"`, "venue bybit's"}},
		{"paper's name", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("paper", "binance") + "]"}, []string{`account "paper"`, "built-in paper venue"}},
		{"a default account configured twice", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("binance", "binance") + "]",
			"HOOX_BINANCE_API_KEY": "k", "HOOX_BINANCE_API_SECRET": "sec-SECRETVALUE"}, []string{`account "binance"`, "HOOX_BINANCE_API_KEY configures already"}},
		{"an unknown venue", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("main", "kraken") + "]"}, []string{`account "main": venue "kraken" is not one of binance`}},
		{"no secret", map[string]string{"HOOX_ACCOUNTS": `[{"name":"main","venue":"binance","api_key":"key-SECRETVALUE"}]`}, []string{`account "main": api_key and api_secret are both required`}},
		{"no passphrase", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("o", "okx-swap") + "]"}, []string{`account "o": api_passphrase is required`}},
		{"a paper account with keys", map[string]string{"HOOX_ACCOUNTS": "[" + accountJSON("p2", "paper") + "]"}, []string{`account "p2": a paper account takes no keys`}},
		{"both variables", map[string]string{"HOOX_ACCOUNTS": "[]", "HOOX_ACCOUNTS_FILE": filepath.Join(dir, "a.json")}, []string{"HOOX_ACCOUNTS_FILE", "HOOX_ACCOUNTS is set too"}},
		{"a missing file", map[string]string{"HOOX_ACCOUNTS_FILE": filepath.Join(dir, "missing.json")}, []string{"HOOX_ACCOUNTS_FILE", "no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": unreachableDB, "HOOX_WEBHOOK_SECRET": "webhook-secret-long"}
			for k, v := range tt.env {
				env[k] = v
			}
			var stdout, stderr strings.Builder
			err := run(context.Background(), []string{"serve"}, func(k string) string { return env[k] }, &stdout, &stderr)
			require.Error(t, err)
			for _, want := range tt.says {
				require.Contains(t, err.Error(), want)
			}
			require.NotContains(t, err.Error(), "SECRETVALUE")
			require.Empty(t, stderr.String(), "refused before any log")
		})
	}
}
