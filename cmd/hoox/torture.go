package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/torture"
)

// runTorture maps flags onto torture.Config and runs the fault simulator
// with this very executable as the replicas.
func runTorture(ctx context.Context, args []string, stdout io.Writer) error {
	cfg := torture.DefaultConfig()
	fs := flag.NewFlagSet("hoox torture", flag.ContinueOnError)
	fs.SetOutput(stdout)
	seed := fs.String("seed", "", "seed that plans the run (default: from the clock; printed)")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "how long signals and faults are generated")
	fs.Float64Var(&cfg.Rate, "rate", cfg.Rate, "new signals per second")
	fs.IntVar(&cfg.Replicas, "replicas", cfg.Replicas, "hoox serve processes")
	fs.Float64Var(&cfg.TimeScale, "time-scale", cfg.TimeScale, "multiplies TradingView's 3s/5s timings (1 = real)")
	fs.DurationVar(&cfg.RecoveryBound, "recovery-bound", cfg.RecoveryBound, "how long after the faults stop every venue order must be recorded")
	faults := fs.String("faults", "", "comma-separated fault kinds (default all: "+strings.Join(torture.AllFaults(), ",")+")")
	tolerate := fs.String("tolerate", "", "known hoox bugs reported without failing the run: "+strings.Join(torture.KnownIssues(), ","))
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "keep Postgres and the replicas' logs here (default: a temp dir, removed after a pass)")
	fs.Usage = func() {
		fmt.Fprint(stdout, "Usage: hoox torture [flags]\n\nSeeded fault-injection run against a local Postgres, hoox replicas and the venue fakes (loopback only).\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000)
	if *seed != "" {
		n, err := strconv.ParseUint(*seed, 10, 64)
		if err != nil {
			return fmt.Errorf("torture: --seed %q is not a non-negative integer", *seed)
		}
		cfg.Seed = n
	}
	if *tolerate != "" {
		cfg.Tolerate = strings.Split(*tolerate, ",")
	}
	if *faults != "" {
		cfg.Faults = strings.Split(*faults, ",")
	}
	bin, err := os.Executable()
	if err != nil {
		return fmt.Errorf("torture: find the hoox executable: %w", err)
	}
	cfg.Binary, cfg.Out = bin, stdout
	_, err = torture.Run(ctx, cfg)
	if errors.Is(err, torture.ErrCheckFailed) {
		return fmt.Errorf("torture: checks failed for seed %d (history and replay command above)", cfg.Seed)
	}
	return err
}
