package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/timing"
)

// DefaultScript is the script the throughput goal is measured against: the
// minimal durable work of hoox's own protocol (referenceScript).
const DefaultScript = "reference.sql"

// PgbenchVariants are the scripts PgbenchScript writes, DefaultScript first.
func PgbenchVariants() []string {
	return []string{DefaultScript, "minimal.sql", "claim.sql", "claim-pipelined.sql", "claim-nomarker.sql"}
}

// ReferenceSchema holds the bare tables of the reference script, in a
// schema of their own so they never mix with hoox's: the intent (i), the
// venue's book (f), the trace (t), the order (o) and the audit event (e).
const ReferenceSchema = `
CREATE SCHEMA IF NOT EXISTS reference;
CREATE TABLE IF NOT EXISTS reference.i (client_order_id text PRIMARY KEY, lock_key text NOT NULL,
                                        sent_at timestamptz NOT NULL DEFAULT now(), outcome text);
CREATE INDEX IF NOT EXISTS i_sent_at_idx ON reference.i (sent_at);
CREATE TABLE IF NOT EXISTS reference.f (client_order_id text PRIMARY KEY, symbol text NOT NULL, quantity numeric NOT NULL);
CREATE TABLE IF NOT EXISTS reference.t (trace_id text PRIMARY KEY, fingerprint bytea NOT NULL, status text NOT NULL,
                                        expires_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS reference.o (trace_id text NOT NULL, client_order_id text PRIMARY KEY, symbol text NOT NULL,
                                        quantity numeric NOT NULL, status text NOT NULL);
CREATE TABLE IF NOT EXISTS reference.e (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, trace_id text NOT NULL,
                                        event text NOT NULL, at timestamptz NOT NULL DEFAULT now(), detail jsonb NOT NULL)`

// referenceScript is the minimal durable work of hoox's recovery protocol
// for one new signal (issue 21), one statement per round trip: (1) the
// intent (client order ID, lock key, sent_at, indexed by sent_at for the
// sweeper) in its own synchronous commit, which the protocol requires
// before the first byte goes to a venue; (2) the venue's own commit (the
// paper fill, which paper's pool commits with synchronous_commit off, as
// in hoox); (3) one transaction: the advisory lock, the trace insert, the
// order insert, one audit event, the intent's settlement and the trace
// update. :k is the signal's key.
const referenceScript = `INSERT INTO reference.i (client_order_id, lock_key) VALUES (md5(:k), :k) ON CONFLICT DO NOTHING;
SET synchronous_commit = off;
INSERT INTO reference.f (client_order_id, symbol, quantity) VALUES (md5(:k), 'BTCUSDT', 0.001) ON CONFLICT DO NOTHING;
RESET synchronous_commit;
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended(:k, 0));
INSERT INTO reference.t (trace_id, fingerprint, status, expires_at) VALUES (:k, sha256(convert_to(:k, 'UTF8')), 'dispatching', now() + interval '24 hours') ON CONFLICT DO NOTHING;
INSERT INTO reference.o (trace_id, client_order_id, symbol, quantity, status) VALUES (:k, md5(:k), 'BTCUSDT', 0.001, 'filled') ON CONFLICT DO NOTHING;
INSERT INTO reference.e (trace_id, event, detail) VALUES (:k, 'dispatched', '{}');
UPDATE reference.i SET outcome = 'dispatched' WHERE client_order_id = md5(:k);
UPDATE reference.t SET status = 'dispatched' WHERE trace_id = :k;
COMMIT;
`

// MinimalSchema holds the four bare tables of the minimal script, in a
// schema of their own so they never mix with hoox's.
const MinimalSchema = `
CREATE SCHEMA IF NOT EXISTS minimal;
CREATE TABLE IF NOT EXISTS minimal.f (client_order_id text PRIMARY KEY, symbol text NOT NULL, quantity numeric NOT NULL);
CREATE TABLE IF NOT EXISTS minimal.t (trace_id text PRIMARY KEY, fingerprint bytea NOT NULL, status text NOT NULL,
                                      expires_at timestamptz NOT NULL);
CREATE TABLE IF NOT EXISTS minimal.o (trace_id text NOT NULL, client_order_id text PRIMARY KEY, symbol text NOT NULL,
                                      quantity numeric NOT NULL, status text NOT NULL);
CREATE TABLE IF NOT EXISTS minimal.e (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, trace_id text NOT NULL,
                                      event text NOT NULL, at timestamptz NOT NULL DEFAULT now(), detail jsonb NOT NULL)`

// minimalScript is the least durable work one new signal needs, one
// statement per round trip: the venue's write committed (f), then one
// transaction with the advisory lock, the trace insert, the order insert,
// one audit event and the trace update — two synchronous commits. :k is
// the signal's key.
const minimalScript = `INSERT INTO minimal.f (client_order_id, symbol, quantity) VALUES (md5(:k), 'BTCUSDT', 0.001) ON CONFLICT DO NOTHING;
BEGIN;
SELECT pg_advisory_xact_lock(hashtextextended(:k, 0));
INSERT INTO minimal.t (trace_id, fingerprint, status, expires_at) VALUES (:k, sha256(convert_to(:k, 'UTF8')), 'dispatching', now() + interval '24 hours') ON CONFLICT DO NOTHING;
INSERT INTO minimal.o (trace_id, client_order_id, symbol, quantity, status) VALUES (:k, md5(:k), 'BTCUSDT', 0.001, 'filled') ON CONFLICT DO NOTHING;
INSERT INTO minimal.e (trace_id, event, detail) VALUES (:k, 'dispatched', '{}');
UPDATE minimal.t SET status = 'dispatched' WHERE trace_id = :k;
COMMIT;
`

// The pgbench expressions that stand in for one new signal's parameters.
// Each run writes its own symbol and trace IDs from -D run=..., pgbench's
// :client_id and a random :r, so runs and clients never collide. No string
// literal may hold a colon followed by a letter (canonical JSON does): pgbench
// would read it as a variable.
const (
	pgTraceID     = `'k:' || 'pgb-' || CAST(:run AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:r AS text)`
	pgFingerprint = `md5('f' || CAST(:run AS text) || CAST(:client_id AS text) || CAST(:r AS text))`
	pgClientOrder = `'hx' || substr(md5(` + pgTraceID + `), 1, 30)`
	pgSymbol      = `'PGBENCH-' || CAST(:run AS text)`
	pgSourceIP    = `'127.0.0.1'`
	pgSignal      = `'{"action": "buy", "exchange": "paper", "order_type": "market", "quantity": "0.01", "side": "buy", "strategy": "bench", "symbol": "PGBENCH", "test": false}'`
)

// placeholderRE matches a bind parameter of the exported statements.
var placeholderRE = regexp.MustCompile(`\$(\d+)\b`)

// cast types a pgbench expression as its parameter: pgbench sends its
// variables untyped, and a NULL must still resolve to the parameter's type.
func cast(expr, typ string) string { return "CAST(" + expr + " AS " + typ + ")" }

// bind replaces sql's $n placeholders with args[n-1] and ends the statement
// with a semicolon, which is where pgbench ends a (possibly multi-line) SQL
// command. A statement whose parameters no longer match args is an error, so
// a change to db/claim.go cannot silently bench different SQL.
func bind(sql string, args ...string) (string, error) {
	used := make([]bool, len(args))
	var err error
	out := placeholderRE.ReplaceAllStringFunc(sql, func(m string) string {
		n, _ := strconv.Atoi(m[1:])
		if n < 1 || n > len(args) {
			err = fmt.Errorf("statement has %s, the benchmark binds %d parameters: %.60q", m, len(args), strings.TrimSpace(sql))
			return m
		}
		used[n-1] = true
		return args[n-1]
	})
	if err != nil {
		return "", err
	}
	for i, u := range used {
		if !u {
			return "", fmt.Errorf("statement has no $%d, the benchmark binds %d parameters: %.60q", i+1, len(args), strings.TrimSpace(sql))
		}
	}
	return strings.TrimSpace(out) + ";", nil
}

// claimRoundTrips are the statements of one new signal in hoox, grouped as
// hoox sends them: db.Claim's batch, ClaimTx.Record's batch, db.WriteIntent's
// batch and the paper venue's autocommit fill.
type claimRoundTrips struct {
	claim, record, marker, fill []string
}

func newClaimRoundTrips() (claimRoundTrips, error) {
	var rt claimRoundTrips
	var errs []error
	stmt := func(sql string, args ...string) string {
		s, err := bind(sql, args...)
		errs = append(errs, err)
		return s
	}
	trace := cast(pgTraceID, "text")
	clientOrder := cast(pgClientOrder, "text")
	symbol := cast(pgSymbol, "text")
	sourceIP := cast(pgSourceIP, "inet")
	lockWait := fmt.Sprintf("'%dms'", timing.DefaultConfig().LockWait.Milliseconds())
	ttl := strconv.FormatInt(timing.DefaultConfig().TraceTTL.Milliseconds(), 10)
	idleWait := fmt.Sprintf("'%dms'", (timing.DefaultConfig().VenueTimeout + 45*time.Second).Milliseconds())

	rt.claim = []string{
		"BEGIN;",
		stmt(db.ClaimLockSQL, cast(lockWait, "text"), cast(idleWait, "text"), trace, trace),
		stmt(db.ClaimSQL,
			trace,                       // $1 trace_id
			cast(pgFingerprint, "text"), // $2 fingerprint
			cast("'live'", "text"),      // $3 mode
			cast("'client'", "text"),    // $4 key_source
			cast("'paper'", "text"),     // $5 exchange
			symbol,                      // $6 symbol
			cast("'buy'", "text"),       // $7 action
			cast(pgSignal, "jsonb"),     // $8 signal
			sourceIP,                    // $9 source_ip
			cast("NULL", "timestamptz"), // $10 signal_time
			cast(ttl, "bigint"),         // $11 TTL in ms
			cast("jsonb_build_object('fingerprint', "+pgFingerprint+", 'key_source', 'client')", "jsonb"), // $12 detail
			cast("NULL", "bigint"), // $13 dedup window in ms: none for a client key
			trace,                  // $14 lock key: the trace ID for a client key
		),
	}
	rt.record = []string{
		stmt(db.RecordOrderSQL,
			cast("gen_random_uuid()", "uuid"), trace, clientOrder, cast("'paper'", "text"), symbol,
			cast("'buy'", "text"), cast("'buy'", "text"), cast("'market'", "text"), cast("0.01", "numeric"),
			cast("NULL", "numeric"), cast("NULL", "integer"), cast("'live'", "text"), cast("'filled'", "text"),
			cast("'paper-' || gen_random_uuid()", "text"), cast("100", "numeric"), cast("NULL", "text"), cast("0.01", "numeric"),
			cast("NULL", "numeric"), cast("NULL", "numeric"), // take_profit, stop_loss
			cast("100", "numeric"), cast("NULL", "numeric"), cast("NULL", "text"), // avg_price, fee, fee_asset
			cast("NULL", "text"), cast("NULL", "text"), // strategy, base_asset
			cast("false", "boolean"),            // plans_legs: a market order without legs
			trace, cast("'dispatched'", "text"), // the trace and its status
			cast("'dispatched'", "text"), clientOrder, // the intent's outcome, and the intent
			trace, "'dispatched'", cast(pgSourceIP, "text"), // the dispatched event
			"jsonb_build_object('order_id', gen_random_uuid(), 'client_order_id', "+pgClientOrder+", 'order_status', 'filled')::text"),
		"COMMIT;",
	}
	// db.WriteIntent sends the intent, with its commit setting, as one
	// implicit transaction; pgbench does the same with a lone statement.
	rt.marker = []string{
		stmt(db.WriteIntentSQL, clientOrder, trace, trace, cast(pgFingerprint, "text"), cast("'live'", "text"),
			cast("'client'", "text"), cast("'paper'", "text"), symbol, cast("'buy'", "text"),
			cast(`'{"Symbol": "PGBENCH", "Side": "buy", "Quantity": "0.01"}'`, "jsonb"), cast(pgSignal, "jsonb"),
			sourceIP, cast("NULL", "timestamptz"), cast("now()", "timestamptz"),
			cast("0", "integer"),                             // $15 execution: each benchmark trace is a lock key of its own
			cast("'off'", "text"),                            // $16 the commit: paper's intent may commit asynchronously
			cast("0", "integer"),                             // $17 armed: a new client order ID, which no intent holds
			cast("(random() * 9e18)::bigint + 1", "bigint")), // $18 the arming's ID
	}
	// The venue's pool commits with synchronous_commit off
	// (paper.PoolConfig); pgbench has one connection, so it sets and resets it.
	rt.fill = []string{
		"SET synchronous_commit = off;",
		stmt(paper.InsertSQL, clientOrder, cast("'paper-' || gen_random_uuid()", "text"), symbol,
			cast("'buy'", "text"), cast("'market'", "text"), cast("0.01", "numeric"), cast("NULL", "numeric"),
			cast("100", "numeric"), cast("'filled'", "text"), cast("false", "boolean"),
			cast("NULL", "numeric"), cast("NULL", "numeric"), // take_profit, stop_loss
			cast("false", "boolean")), // reduce_only: a buy
		"RESET synchronous_commit;",
	}
	return rt, errors.Join(errs...)
}

// PgbenchScript returns the pgbench script named variant. reference.sql is
// the minimal durable work of hoox's protocol (see referenceScript; it runs
// on ReferenceSchema's tables, which RunPgbench creates) and the ratio's
// reference; minimal.sql is the earlier reference, which left out the
// intent's synchronous commit (MinimalSchema). The others are built
// from the statements hoox runs (db.ClaimLockSQL, db.ClaimSQL, db.InsertOrderSQL,
// db.SettleTraceSQL, db.InsertEventSQL, paper.InsertSQL) with pgbench
// expressions in place of their parameters, so the benchmark cannot drift
// from the gateway:
//
//   - claim.sql sends one statement at a time: the intent with its
//     dispatch_started event in its own transaction with synchronous_commit
//     off, the paper fill (autocommit), then the claim transaction (BEGIN,
//     lock_timeout, advisory lock, claim; order, settle trace and intent,
//     event, COMMIT). On one connection the intent and the fill commit
//     before the claim begins, where hoox sends them on other connections
//     while the claim is open; the work and the three commits (one
//     synchronous) are the same. The ratio's reference before minimal.sql.
//   - claim-pipelined.sql has hoox's round trips: each batch is one pgbench
//     pipeline (PG 14+), as pgx sends it, and the fill one more; four round
//     trips per signal.
//   - claim-nomarker.sql is claim-pipelined.sql without the marker: what a
//     venue that refuses a reused client order ID for good would allow; three
//     round trips, two commits.
//
// Pipelines need pgbench -M extended or prepared.
func PgbenchScript(variant string) (string, error) {
	rt, err := newClaimRoundTrips()
	if err != nil {
		return "", fmt.Errorf("pgbench script %s: %w", variant, err)
	}
	var trips [][]string
	pipelined := true
	switch variant {
	case "reference.sql", "minimal.sql":
		text, what := referenceScript, "the minimal durable work of hoox's protocol (bench.ReferenceSchema's tables)"
		if variant == "minimal.sql" {
			text, what = minimalScript, "the least durable work for one signal, without the intent (bench.MinimalSchema's tables)"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "-- %s: %s.\n", variant, what)
		b.WriteString("\\set r random(1, 9000000000000000000)\n")
		b.WriteString(strings.ReplaceAll(text, ":k", cast(pgTraceID, "text")))
		return b.String(), nil
	// The intent and the fill come first, as in hoox (where they commit
	// while the claim is open): the record then settles the intent, and
	// unsettled intents do not pile up run after run.
	case "claim.sql":
		trips, pipelined = [][]string{rt.marker, rt.fill, rt.claim, rt.record}, false
	case "claim-pipelined.sql":
		trips = [][]string{rt.marker, rt.fill, rt.claim, rt.record}
	case "claim-nomarker.sql":
		trips = [][]string{rt.fill, rt.claim, rt.record}
	default:
		return "", fmt.Errorf("unknown pgbench script %q (want one of %s)", variant, strings.Join(PgbenchVariants(), ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "-- %s, generated by bench.PgbenchScript from hoox's own statements.\n", variant)
	b.WriteString("\\set r random(1, 9000000000000000000)\n")
	for _, trip := range trips {
		// A lone statement is one round trip already.
		pipe := pipelined && len(trip) > 1
		if pipe {
			b.WriteString("\\startpipeline\n")
		}
		for _, s := range trip {
			b.WriteString(s + "\n")
		}
		if pipe {
			b.WriteString("\\endpipeline\n")
		}
	}
	return b.String(), nil
}

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
	// Rate, when positive, is pgbench's -R: an open loop at this many
	// scripts per second, whose latencies (from the scheduled start, so
	// queueing counts as it does for the HTTP load) are in
	// PgbenchResult.Latencies.
	Rate int
}

// PgbenchResult is what pgbench reported.
type PgbenchResult struct {
	TPS     float64
	Latency time.Duration // pgbench's average latency
	// Transactions is how many scripts ran to completion.
	Transactions int
	// CPU is the pgbench process's own CPU time (user and system).
	CPU    time.Duration
	Output string
	// Latencies summarise every transaction's latency (from pgbench's
	// per-transaction log) when the run was rate-limited.
	Latencies Outcome
	// lats are those latencies, for pooling rounds (pooledP99).
	lats []time.Duration
}

var processedRE = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)

// createSchema creates a bare script's tables (MinimalSchema,
// ReferenceSchema) when missing.
func createSchema(ctx context.Context, databaseURL, schema string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return fmt.Errorf("pgbench schema: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, schema); err != nil {
		return fmt.Errorf("pgbench schema: %w", err)
	}
	return nil
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
	switch cfg.Script {
	case "minimal.sql":
		if err := createSchema(ctx, cfg.DatabaseURL, MinimalSchema); err != nil {
			return PgbenchResult{}, err
		}
	case "reference.sql":
		if err := createSchema(ctx, cfg.DatabaseURL, ReferenceSchema); err != nil {
			return PgbenchResult{}, err
		}
	}
	script := filepath.Join(dir, cfg.Script)
	if err := os.WriteFile(script, []byte(text), 0o644); err != nil {
		return PgbenchResult{}, err
	}
	secs := max(int(cfg.Duration.Round(time.Second)/time.Second), 1)
	args := []string{"-n", "-M", "prepared", "-c", strconv.Itoa(cfg.Clients), "-j", strconv.Itoa(cfg.Threads),
		"-T", strconv.Itoa(secs), "-f", script, "-D", "run=" + RunID()}
	logPrefix := filepath.Join(dir, "txlog")
	if cfg.Rate > 0 {
		args = append(args, "-R", strconv.Itoa(cfg.Rate), "-l", "--log-prefix", logPrefix)
	}
	args = append(args, cfg.DatabaseURL)
	cmd := exec.CommandContext(ctx, filepath.Join(cfg.BinDir, "pgbench"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return PgbenchResult{Output: out.String()}, fmt.Errorf("pgbench: %w: %s", err, tail(out.String(), 1500))
	}
	res := PgbenchResult{Output: out.String(), CPU: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	m := tpsRE.FindStringSubmatch(res.Output)
	if m == nil {
		return res, fmt.Errorf("pgbench: no tps in its output: %s", tail(res.Output, 1500))
	}
	res.TPS, _ = strconv.ParseFloat(m[1], 64)
	if m := processedRE.FindStringSubmatch(res.Output); m != nil {
		res.Transactions, _ = strconv.Atoi(m[1])
	}
	if m := latencyRE.FindStringSubmatch(res.Output); m != nil {
		f, _ := strconv.ParseFloat(m[1], 64)
		res.Latency = time.Duration(f * float64(time.Millisecond))
	}
	if cfg.Rate > 0 {
		lats, err := readTxLogs(dir)
		if err != nil {
			return res, err
		}
		res.Latencies = summarise("pgbench", lats)
		res.lats = lats
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

// readTxLogs reads the latencies of pgbench's per-transaction logs (-l)
// in dir: the third field of each line, in microseconds.
func readTxLogs(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "txlog*"))
	if err != nil {
		return nil, err
	}
	var lats []time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				continue // "skipped" under -L, or a partial line
			}
			lats = append(lats, time.Duration(us)*time.Microsecond)
		}
	}
	if len(lats) == 0 {
		return nil, errors.New("pgbench: no per-transaction log")
	}
	return lats, nil
}
