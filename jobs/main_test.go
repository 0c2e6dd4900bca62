package jobs_test

import (
	"testing"

	"github.com/hoox/hoox/testcontainers"
)

func TestMain(m *testing.M) { testcontainers.MainLeakChecked(m, nil) }
