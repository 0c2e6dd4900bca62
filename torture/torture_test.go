package torture_test

import (
	"context"
	"errors"
	"flag"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/torture"
)

var (
	// Seed 61's 25 s plan holds every operation and fault kind at least
	// once (two Postgres restarts, two kills after acceptance).
	seed     = flag.Uint64("torture.seed", 61, "seed of TestTorture's run")
	duration = flag.Duration("torture.duration", 25*time.Second, "how long TestTorture generates signals and faults")
)

// TestTorture is the fixed-seed fault simulation inside `go test ./...`:
// three real hoox processes, a real Postgres, the venue fakes and every
// fault kind, at half of TradingView's timings. Replay a failure with the
// command it prints, or here with -torture.seed.
func TestTorture(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault simulation runs real processes for half a minute")
	}
	bin := filepath.Join(t.TempDir(), "hoox")
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/hoox").CombinedOutput()
	require.NoError(t, err, "build hoox: %s", out)

	cfg := torture.DefaultConfig()
	cfg.Seed, cfg.Duration, cfg.Binary = *seed, *duration, bin
	cfg.Rate, cfg.TimeScale, cfg.RecoveryBound = 2, 0.5, 45*time.Second
	cfg.Faults = torture.AllFaults()
	cfg.Out = testWriter{t}
	cfg.Replay = "go test ./torture -run TestTorture -count=1 -v -args -torture.seed=" + uintText(*seed) + " -torture.duration=" + duration.String()
	res, err := torture.Run(context.Background(), cfg)
	if errors.Is(err, torture.ErrCheckFailed) {
		t.Fatalf("the simulator found %d violations (seed %d); see the histories above", res.Failed(), *seed)
	}
	require.NoError(t, err)
	require.Positive(t, res.Checks["at_most_one_order_per_signal"], "the run checked signals")
	require.Positive(t, res.Answers["200"], "some signals were placed")
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func uintText(u uint64) string { return strconv.FormatUint(u, 10) }
