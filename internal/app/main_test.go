package app_test

import (
	"os"
	"testing"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// TestMain shares one Postgres server across the package's tests and, after
// a green run, fails if any goroutine outlived its test: every App must shut
// down completely.
func TestMain(m *testing.M) {
	os.Exit(pgtest.RunLeakChecked(m, apptest.Client.CloseIdleConnections))
}
