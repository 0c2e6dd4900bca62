// Command hoox is the exactly-once gateway for trading signals.
//
//	hoox dev       run on an embedded local Postgres with the paper venue
//	hoox serve     run against DATABASE_URL
//	hoox migrate   up | down | status
//	hoox purge     delete expired trace IDs and old audit rows now
//	hoox torture   seeded fault-injection run against replicas and fakes
//
// main stays tiny: everything happens in run, which tests call directly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hoox:", err)
		os.Exit(1)
	}
}

const usage = `hoox — an exactly-once gateway for trading signals.

Usage:
  hoox dev       run on an embedded local Postgres with the paper venue (no setup)
  hoox serve     run against DATABASE_URL (needs HOOX_WEBHOOK_SECRET)
  hoox migrate   up | down | down-to-zero | status
  hoox purge     delete expired trace IDs and old audit rows now (needs DATABASE_URL)
  hoox healthcheck [--url http://127.0.0.1:8080/readyz]   exit 0 when ready (for container health checks)
  hoox bench     load-test hoox and compare it with pgbench (see docs/BENCHMARKS.md)
  hoox torture   seeded fault-injection run: replicas, Postgres and venue fakes under a nemesis (see README)

Run 'hoox <command> --help' for the settings of a command.
`

// run is the whole program; stdout receives what a person reads. Asking for
// help is not an error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	err := dispatch(ctx, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

func dispatch(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "dev":
		return runDev(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout)
	case "purge":
		return runPurge(ctx, rest, getenv, stdout)
	case "bench":
		return runBench(ctx, rest, getenv, stdout, stderr)
	case "torture":
		return runTorture(ctx, rest, stdout)
	case "healthcheck":
		return runHealthcheck(ctx, rest, stdout)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		_, _, err := parseConfig("serve", []string{"--help"}, getenv, stdout, nil)
		return err
	default:
		return fmt.Errorf("unknown command %q; run 'hoox --help'", cmd)
	}
}
