package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/pgtest"
)

func TestPurgeCommand(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	pool := pgtest.OpenPool(t, dbURL)
	_, err := pool.Exec(ctx, `
INSERT INTO trace_ids (trace_id, fingerprint, mode, key_source, status, exchange, symbol, action, signal, expires_at)
SELECT 'k:' || i, 'fp', 'live', 'client', 'dispatched', 'paper', 'BTCUSDT', 'buy', '{}',
       CASE WHEN i <= 3 THEN now() - interval '1 minute' ELSE now() + interval '1 hour' END
FROM generate_series(1, 5) AS i;
INSERT INTO trace_events (trace_id, event, at) VALUES ('k:9', 'received', now() - interval '100 days')`)
	require.NoError(t, err)

	env := map[string]string{"DATABASE_URL": dbURL}
	var stdout bytes.Buffer
	require.NoError(t, run(ctx, []string{"purge"}, func(k string) string { return env[k] }, &stdout, &stdout))
	require.Equal(t, "purged 3 trace IDs and 1 audit events\n", stdout.String())

	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM trace_ids`).Scan(&left))
	require.Equal(t, 2, left)

	err = run(ctx, []string{"purge"}, func(string) string { return "" }, &stdout, &stdout)
	require.ErrorContains(t, err, "DATABASE_URL")
}
