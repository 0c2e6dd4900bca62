package db_test

import (
	"testing"

	"github.com/hoox/hoox/testcontainers"
)

// TestMain shares one Postgres server across the package's tests; each test
// clones its own migrated database from the harness's template.
func TestMain(m *testing.M) { testcontainers.MainLeakChecked(m, nil) }
