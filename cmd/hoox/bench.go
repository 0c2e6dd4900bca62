package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hoox/hoox/bench"
)

// runBench maps `hoox bench`'s flags and environment onto [bench.Options];
// the orchestration lives in package bench.
const benchUsage = `Usage: hoox bench [flags]

Sends signals to hoox (lean HTTP/1.1 senders) and checks, from the database, that each
placed exactly one order. Without --url it starts its own hoox in-process on
a throwaway local Postgres (fsync and synchronous_commit on).

  hoox bench --rate 1000 --duration 10s          open loop: 1,000 new signals/s
  hoox bench --rate 0 --workers 8                closed loop at maximum, 8 senders
  hoox bench --rate 1000 --repeat-one            1,000 repeats/s of one settled key
  hoox bench --target healthz --rate 1000        the floor of the measurement
  hoox bench --pgbench --rounds 3                hoox vs pgbench, same SQL, interleaved
  hoox bench --naive                             SELECT-then-INSERT under a duplicate storm
  hoox bench --suite                             every goal of docs/BENCHMARKS.md
  hoox bench --venue binance-fake                the Binance adapter on its fake vs paper: Place and webhook latency

Flags:
`

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := benchOptions(args, getenv, stdout)
	if err != nil {
		return err
	}
	return bench.Command(ctx, o, stdout, stderr)
}

// benchOptions reads `hoox bench`'s flags, and the secrets' environment
// variables for flags not given; usage goes to stdout.
func benchOptions(args []string, getenv func(string) string, stdout io.Writer) (bench.Options, error) {
	var o bench.Options
	fs := flag.NewFlagSet("hoox bench", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.StringVar(&o.URL, "url", "", "base URL of a running hoox (empty: start one in-process on an embedded Postgres)")
	// The secrets' defaults come from the environment after Parse (see
	// fromEnv), not as flag defaults: PrintDefaults, which --help and every
	// flag error call, prints a flag's default.
	fs.StringVar(&o.Secret, "secret", "", "webhook secret of the hoox at --url (default: $HOOX_WEBHOOK_SECRET)")
	fs.StringVar(&o.AdminToken, "admin-token", "", "admin token of the hoox at --url (default: $HOOX_ADMIN_TOKEN; the purge goal runs the purge through POST /admin/purge)")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "its database, for the exactly-once check and pgbench (default: $DATABASE_URL)")
	fs.StringVar(&o.Target, "target", "webhook", "webhook or healthz")
	fs.IntVar(&o.Rate, "rate", 1000, "requests per second, open loop (0: closed loop at maximum with --workers)")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "length of each load run")
	fs.IntVar(&o.Workers, "workers", 8, "concurrent senders (closed loop)")
	fs.Float64Var(&o.DupRatio, "dup-ratio", 0, "share of requests that repeat a key already sent")
	fs.BoolVar(&o.RepeatOne, "repeat-one", false, "every request repeats one settled key")
	fs.BoolVar(&o.Pgbench, "pgbench", false, "compare closed-loop throughput with pgbench running the same SQL (generated from db's statements, see bench.PgbenchScript)")
	fs.StringVar(&o.PgbenchScripts, "pgbench-script", bench.DefaultScript+",claim.sql",
		"comma-separated pgbench scripts: reference.sql (the minimal durable work of the protocol: synchronous intent, venue fill, one claim transaction), minimal.sql (the same without the intent) or variants generated from hoox's own statements (claim.sql, claim-pipelined.sql, claim-nomarker.sql); the first is the ratio's reference")
	fs.IntVar(&o.Rounds, "rounds", 3, "interleaved hoox/pgbench rounds; the median ratio is reported")
	fs.BoolVar(&o.Naive, "naive", false, "run the naive SELECT-then-INSERT baseline (and hoox) under a duplicate storm")
	fs.IntVar(&o.StormSenders, "storm-senders", 50, "concurrent senders of one key in the storm")
	fs.IntVar(&o.StormRounds, "storm-rounds", 20, "keys in the storm, one after another")
	fs.IntVar(&o.RoundTrips, "round-trips", 0, "count Postgres round trips per signal over this many signals (in-process gateway; the suite counts 20 when unset)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the closed-loop run (hoox and generator share the process)")
	fs.BoolVar(&o.Suite, "suite", false, "measure every goal: round trips, floor, open loop, repeats, throughput vs pgbench, memory, storm, purge")
	fs.IntVar(&o.PurgeBatch, "purge-batch", 5000, "purge goal: rows per purge transaction (HOOX_PURGE_BATCH)")
	fs.IntVar(&o.PurgeRows, "purge-rows", 0, "purge goal: seed this many expired traces and purge them under 150 signals/s (suite: 1000000; -1 skips it)")
	fs.StringVar(&o.ServerLog, "server-log", "", "in-process hoox's JSON log file (empty: formatted and discarded)")
	fs.BoolVar(&o.Spawn, "spawn", false, "run the embedded hoox as a child process ('hoox serve'), so its memory is measured alone")
	fs.StringVar(&o.Venue, "venue", "", "time a real adapter against its in-process fake next to paper: "+strings.Join(bench.FakeVenueNames(), ", "))
	fs.IntVar(&o.VenueOrders, "venue-orders", 500, "--venue: orders placed one at a time on each venue (Binance's weight budget caps a minute at 2000-5000)")
	fs.IntVar(&o.VenueRate, "venue-rate", 20, "--venue: signals/s of the webhook load sent to each venue (open loop; kept under the adapters' rate budgets)")
	fs.Func("pg-setting", "an extra setting of the embedded Postgres, name=value (repeatable), e.g. commit_delay=100", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("%q is not name=value", v)
		}
		o.PgSettings = append(o.PgSettings, v)
		return nil
	})
	fs.IntVar(&o.MinConns, "db-min-conns", -1, "the embedded hoox's HOOX_DB_MIN_CONNS (-1: hoox's default)")
	fs.IntVar(&o.MaxConns, "db-max-conns", 0, "the embedded hoox's HOOX_DB_MAX_CONNS (0: hoox's default)")
	fs.IntVar(&o.SeedLive, "seed-live", 0, "settled signals the embedded database holds before the runs, copied from a short run of its own and spread over the last day, in hoox's tables and the reference's, vacuumed and analysed, as on a server that has run a day (suite: 300000; -1: empty tables)")
	fs.IntVar(&o.PrewarmWAL, "prewarm-wal", 64, "WAL segments (16 MB each) the embedded Postgres makes ready for reuse before the runs, as a server that has run a while has them (0: a fresh cluster's none)")
	fs.BoolVar(&o.Statements, "statements", false, "report pg_stat_statements per run: statements per signal and the costliest (preloads it in the embedded Postgres)")
	rates := fs.String("rates", "100,300,600,1000", "--suite: the open-loop rates of the latency table (new, repeat, floor at each)")
	fs.Usage = func() { fmt.Fprint(stdout, benchUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	fromEnv(fs, getenv, []envFlag{{"secret", "HOOX_WEBHOOK_SECRET", &o.Secret}, {"admin-token", "HOOX_ADMIN_TOKEN", &o.AdminToken},
		{"database-url", "DATABASE_URL", &o.DatabaseURL}})
	for _, r := range strings.Split(*rates, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n <= 0 {
			return o, fmt.Errorf("--rates: %q is not a positive rate", r)
		}
		o.Rates = append(o.Rates, n)
	}
	return o, nil
}

// envFlag is a string flag whose default is an environment variable's
// value.
type envFlag struct {
	flag, env string
	p         *string
}

// fromEnv sets each flag the command line did not give from its
// environment variable; a flag given explicitly, even as "", wins.
func fromEnv(fs *flag.FlagSet, getenv func(string) string, flags []envFlag) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range flags {
		if !given[f.flag] {
			*f.p = getenv(f.env)
		}
	}
}
