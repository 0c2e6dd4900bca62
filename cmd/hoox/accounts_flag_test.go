package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// HOOX_ACCOUNTS is also the flag --accounts (options). A refusal of the
// JSON given as the flag must not print it either: it holds every named
// account's API key and secret, and the error goes to stderr (main), i.e.
// the container's log.
func TestBadAccountsFlagRefusesToStartWithoutPrintingASecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"a misspelt member", []string{"serve", "--accounts", `[{"name":"main","venue":"binance","api_key":"key-SECRETVALUE","api_secet":"sec-SECRETVALUE"}]`}, nil},
		{"not JSON", []string{"serve", "--accounts=" + `[{"name":"main","venue":"binance","api_key":"key-SECRETVALUE","api_secret":"sec-SECRETVALUE"`}, nil},
		{"a wrong type", []string{"serve", "--accounts", "[" + accountJSON("main", "binance", `"testnet":"yes"`) + "]"}, nil},
		{"the file variable set too", []string{"serve", "--accounts", "[" + accountJSON("main", "binance") + "]"},
			map[string]string{"HOOX_ACCOUNTS_FILE": "@file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DATABASE_URL": unreachableDB, "HOOX_WEBHOOK_SECRET": "webhook-secret-long"}
			for k, v := range tt.env {
				if v == "@file" {
					// A valid accounts file, so the flag's Set is what refuses.
					v = filepath.Join(t.TempDir(), "accounts.json")
					require.NoError(t, os.WriteFile(v, []byte(`[{"name":"p2","venue":"paper"}]`), 0o600))
				}
				env[k] = v
			}
			var stdout, stderr strings.Builder
			err := run(context.Background(), tt.args, func(k string) string { return env[k] }, &stdout, &stderr)
			require.Error(t, err)
			// What main prints: "hoox: " + err.
			require.NotContains(t, err.Error(), "SECRETVALUE", "the refusal printed the accounts' credentials")
			require.NotContains(t, stdout.String(), "SECRETVALUE")
			require.NotContains(t, stderr.String(), "SECRETVALUE")
		})
	}
}
