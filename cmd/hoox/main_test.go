package main

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hoox/hoox/testcontainers"
)

// TestMain shares one Postgres server across the package's tests and, after
// a green run, fails if any goroutine outlived its test: every App must
// shut down completely.
func TestMain(m *testing.M) {
	code := testcontainers.Run(m)
	if code == 0 {
		client.CloseIdleConnections()
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
