package db_test

import (
	"testing"

	"github.com/hoox/hoox/internal/pgtest"
)

// TestMain shares one Postgres server across the package's tests; each test
// clones its own migrated database from the harness's template.
func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }
