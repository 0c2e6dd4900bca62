package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// DefaultScript is the script the throughput goal is measured against.
const DefaultScript = "claim.sql"

// PgbenchConfig describes one pgbench run of a script from PgbenchScript.
type PgbenchConfig struct {
	// BinDir holds pgbench (the server binaries' directory).
	BinDir string
	// DatabaseURL is a libpq connection string or URI.
	DatabaseURL string
	// Clients and Threads are pgbench's -c and -j.
	Clients, Threads int
	// Duration is pgbench's -T.
	Duration time.Duration
	// Script names a variant of PgbenchScript; DefaultScript when empty.
	Script string
}

// PgbenchResult is what pgbench reported.
type PgbenchResult struct {
	TPS     float64
	Latency time.Duration // pgbench's average latency
	Output  string
}

var (
	tpsRE     = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	latencyRE = regexp.MustCompile(`latency average = ([0-9.]+) ms`)
)

// RunPgbench runs cfg.Script with -M prepared and returns its rate. Each run
// writes its own symbol (PGBENCH-<run>), so runs never collide.
func RunPgbench(ctx context.Context, cfg PgbenchConfig) (PgbenchResult, error) {
	dir, err := os.MkdirTemp("", "hoox-pgbench-")
	if err != nil {
		return PgbenchResult{}, err
	}
	defer os.RemoveAll(dir)
	if cfg.Script == "" {
		cfg.Script = DefaultScript
	}
	text, err := PgbenchScript(cfg.Script)
	if err != nil {
		return PgbenchResult{}, fmt.Errorf("pgbench script: %w", err)
	}
	script := filepath.Join(dir, cfg.Script)
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		return PgbenchResult{}, err
	}
	secs := max(int(cfg.Duration.Round(time.Second)/time.Second), 1)
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(cfg.Clients), "-j", strconv.Itoa(cfg.Threads),
		"-T", strconv.Itoa(secs), "-f", script, "-D", "run=" + RunID(), cfg.DatabaseURL}
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.BinDir, "pgbench"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return PgbenchResult{Output: out.String()}, fmt.Errorf("pgbench: %w: %s", err, tail(out.String(), 1500))
	}
	res := PgbenchResult{Output: out.String()}
	m := tpsRE.FindStringSubmatch(res.Output)
	if m == nil {
		return res, fmt.Errorf("pgbench: no tps in its output: %s", tail(res.Output, 1500))
	}
	res.TPS, _ = strconv.ParseFloat(m[1], 64)
	if m := latencyRE.FindStringSubmatch(res.Output); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		res.Latency = time.Duration(f * float64(time.Millisecond))
	}
	if strings.Contains(res.Output, "number of failed transactions: ") && !strings.Contains(res.Output, "number of failed transactions: 0 ") {
		return res, fmt.Errorf("pgbench reported failed transactions: %s", tail(res.Output, 1500))
	}
	return res, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
