package jobs_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hoox/hoox/testcontainers"
)

func TestMain(m *testing.M) {
	code := testcontainers.Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
