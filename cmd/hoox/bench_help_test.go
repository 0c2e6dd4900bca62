package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchEnv holds the secrets `hoox bench` reads from the environment.
var benchEnv = map[string]string{
	"HOOX_WEBHOOK_SECRET": "webhook-secret-0123456789",
	"HOOX_ADMIN_TOKEN":    "admin-token-0123456789",
	"DATABASE_URL":        "postgres://hoox:db-password-0123456789@db.example:5432/hoox",
}

// `hoox bench --help` (and any flag error, which prints the same usage)
// must not print the secrets it read from the environment: flag's usage
// prints every flag's default, so the environment may not be one.
func TestBenchHelpPrintsNoSecret(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"--no-such-flag"}} {
		var stdout, stderr bytes.Buffer
		_ = runBench(context.Background(), args, func(k string) string { return benchEnv[k] }, &stdout, &stderr)
		out := stdout.String() + stderr.String()
		require.Contains(t, out, "-secret", "args %q: the usage was printed", args)
		for _, secret := range []string{"webhook-secret-0123456789", "admin-token-0123456789", "db-password-0123456789"} {
			require.NotContains(t, out, secret, "hoox bench %q printed a secret", args)
		}
	}
}

// The secrets still come from the environment when their flags are not
// given, and a flag given on the command line wins, even when empty.
func TestBenchReadsSecretsFromTheEnvironment(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string { return benchEnv[k] }
	o, err := benchOptions(nil, getenv, io.Discard)
	require.NoError(t, err)
	require.Equal(t, benchEnv["HOOX_WEBHOOK_SECRET"], o.Secret)
	require.Equal(t, benchEnv["HOOX_ADMIN_TOKEN"], o.AdminToken)
	require.Equal(t, benchEnv["DATABASE_URL"], o.DatabaseURL)

	o, err = benchOptions([]string{"--secret", "from-flag", "--admin-token="}, getenv, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "from-flag", o.Secret)
	require.Empty(t, o.AdminToken)
	require.Equal(t, benchEnv["DATABASE_URL"], o.DatabaseURL)
}
