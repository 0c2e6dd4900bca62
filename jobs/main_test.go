package jobs_test

import (
	"testing"

	"github.com/hoox/hoox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }
