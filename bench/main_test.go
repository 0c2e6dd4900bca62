package bench

import (
	"testing"

	"github.com/hoox/hoox/internal/pgtest"
)

// TestMain stops the test cluster the database tests share and removes its
// files when they end.
func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }
