package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
)

// /readyz names the failed check — here migrations — and leaves the cause to
// the log.
func TestReadyzNamesPendingMigrations(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	get := func() (int, map[string]any) {
		resp, err := apptest.Client.Get(b.URL + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var body map[string]any
		require.NoError(t, json.Unmarshal(raw, &body), string(raw))
		return resp.StatusCode, body
	}
	status, _ := get()
	require.Equal(t, http.StatusOK, status)

	// Forget the newest migration, as if this binary were newer than the
	// schema.
	_, err := b.Pool.Exec(context.Background(),
		"DELETE FROM goose_db_version WHERE version_id = (SELECT max(version_id) FROM goose_db_version)")
	require.NoError(t, err)
	status, body := get()
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not ready: the migrations check failed", body["detail"])
	require.Contains(t, b.Logs.String(), `"check":"migrations"`)
}
