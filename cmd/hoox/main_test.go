package main

import (
	"testing"

	"github.com/hoox/hoox/testcontainers"
)

// TestMain shares one Postgres server across the package's tests and, after
// a green run, fails if any goroutine outlived its test: every App must shut
// down completely.
func TestMain(m *testing.M) { testcontainers.MainLeakChecked(m, client.CloseIdleConnections) }
