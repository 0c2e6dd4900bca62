package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
)

// pgxDialError is what pgx says when Postgres is down: it names the user,
// the database and the socket path, none of which an open endpoint may show.
const pgxDialError = "failed to connect to `user=hoox_prod database=hoox_live`: /var/run/postgresql/.s.PGSQL.5432 (/var/run/postgresql): dial error: connect: no such file or directory"

func TestReadyzNamesTheFailedCheckNeverTheErrorText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		err   error
		check string
	}{
		{"database", &api.ReadyError{Check: api.ReadyDatabase, Err: errors.New(pgxDialError)}, "database"},
		{"migrations, wrapped", fmt.Errorf("ready: %w", &api.ReadyError{Check: api.ReadyMigrations, Err: errors.New("schema at /srv/hoox_live version 7")}), "migrations"},
		{"an error that names no check", errors.New(pgxDialError), "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			srv := api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{
				Ready:  func(context.Context) error { return tt.err },
				Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
			})
			r := do(t, srv.Handler(), http.MethodGet, "/readyz", "", "")
			require.Equal(t, http.StatusServiceUnavailable, r.Status)
			require.NotEmpty(t, r.Header.Get("Retry-After"))
			p := r.problem(t)
			require.Equal(t, "unavailable", p["code"])
			require.Equal(t, "not ready: the "+tt.check+" check failed", p["detail"])
			for _, secret := range []string{"/var/run", "/srv", "hoox_prod", "hoox_live", "dial error"} {
				require.NotContains(t, string(r.Body), secret)
			}
			require.Contains(t, logs.String(), `"level":"WARN"`)
			require.Contains(t, logs.String(), `"check":"`+tt.check+`"`)
			require.Contains(t, logs.String(), "hoox_live", "the operator finds the cause in the log")
		})
	}
}

func TestReadyzAnswersReadyWhenEveryCheckPasses(t *testing.T) {
	t.Parallel()
	srv := api.New(api.Config{WebhookSecret: webhookSecret}, api.Deps{Ready: func(context.Context) error { return nil }})
	r := do(t, srv.Handler(), http.MethodGet, "/readyz", "", "")
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "ready", r.json(t)["status"])
}
