package bench

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/localpg"
	"github.com/hoox/hoox/internal/pgtest"
)

// hooxStatements are the statements every script must run verbatim.
func hooxStatements() map[string]string {
	return map[string]string{
		"db.ClaimLockSQL":   db.ClaimLockSQL,
		"db.ClaimSQL":       db.ClaimSQL,
		"db.RecordOrderSQL": db.RecordOrderSQL,
		"paper.InsertSQL":   paper.InsertSQL,
	}
}

// bindings matches sql, trimmed and ended by a semicolon, at script[at:]
// with an expression in place of each placeholder, and returns the
// expressions by placeholder occurrence. An expression is the shortest text
// with balanced parentheses, outside string literals, that the statement's
// next fragment follows.
func bindings(script string, at int, sql string) ([]string, bool) {
	sql = strings.TrimSpace(sql)
	locs := placeholderRE.FindAllStringIndex(sql, -1)
	fragments := make([]string, 0, len(locs)+1)
	last := 0
	for _, l := range locs {
		fragments = append(fragments, sql[last:l[0]])
		last = l[1]
	}
	fragments = append(fragments, sql[last:]+";\n")

	pos := at
	var exprs []string
	for i, frag := range fragments {
		if i > 0 {
			end := expressionEnd(script, pos, frag)
			if end < 0 {
				return nil, false
			}
			exprs = append(exprs, script[pos:end])
			pos = end
		}
		if !strings.HasPrefix(script[pos:], frag) {
			return nil, false
		}
		pos += len(frag)
	}
	return exprs, true
}

// expressionEnd is where the expression starting at script[pos:] ends before
// next, or -1.
func expressionEnd(script string, pos int, next string) int {
	depth, quoted := 0, false
	for i := pos; i < len(script); i++ {
		if i > pos && depth == 0 && !quoted && strings.HasPrefix(script[i:], next) {
			return i
		}
		switch c := script[i]; {
		case c == '\n':
			return -1 // expressions are one line
		case c == '\'':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		}
	}
	return -1
}

func TestPgbenchScriptRunsHooxStatements(t *testing.T) {
	t.Parallel()
	for _, variant := range PgbenchVariants() {
		if variant == "minimal.sql" || variant == "reference.sql" {
			continue // references, not hoox's statements
		}
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			script, err := PgbenchScript(variant)
			require.NoError(t, err)
			require.NotRegexp(t, `\$\d`, script, "a placeholder was left for pgbench")
			for name, sql := range hooxStatements() {
				head := strings.TrimSpace(sql)
				if loc := placeholderRE.FindStringIndex(head); loc != nil {
					head = head[:loc[0]]
				}
				occurrences := 0
				for at := 0; ; {
					i := strings.Index(script[at:], head)
					if i < 0 {
						break
					}
					at += i
					occurrences++
					exprs, ok := bindings(script, at, sql)
					require.True(t, ok, "%s: the script's statement at byte %d is not it verbatim (placeholders aside) ended by ;", name, at)
					bound := map[string]string{}
					for j, n := range placeholderRE.FindAllString(sql, -1) {
						if prev, seen := bound[n]; seen {
							require.Equal(t, prev, exprs[j], "%s: %s bound to two expressions", name, n)
						}
						bound[n] = exprs[j]
					}
					at += len(head)
				}
				require.NotZero(t, occurrences, "%s is not in the script", name)
			}
		})
	}
}

func TestPgbenchScriptStructure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		variant      string
		transactions int
		pipelines    int
		marker       bool
	}{
		{variant: "claim.sql", transactions: 1, pipelines: 0, marker: true},
		// The fill is a pipeline too: it sets and resets synchronous_commit
		// around the venue's insert, one round trip. The intent is one
		// statement, a round trip of its own without a pipeline.
		{variant: "claim-pipelined.sql", transactions: 1, pipelines: 3, marker: true},
		{variant: "claim-nomarker.sql", transactions: 1, pipelines: 3, marker: false},
	}
	// pgbench reads a single colon followed by a name as a variable, even in
	// a string literal; only these are defined.
	variableRE := regexp.MustCompile(`(?:^|[^:]):([A-Za-z0-9_]+)`)
	for _, tt := range tests {
		t.Run(tt.variant, func(t *testing.T) {
			t.Parallel()
			script, err := PgbenchScript(tt.variant)
			require.NoError(t, err)

			inTx, inPipeline := false, false
			transactions, pipelines := 0, 0
			for i, line := range strings.Split(strings.TrimSuffix(script, "\n"), "\n") {
				switch line {
				case "BEGIN;":
					require.False(t, inTx, "line %d: BEGIN inside a transaction", i+1)
					inTx = true
					transactions++
				case "COMMIT;":
					require.True(t, inTx, "line %d: COMMIT outside a transaction", i+1)
					inTx = false
				case `\startpipeline`:
					require.False(t, inPipeline, "line %d: nested pipeline", i+1)
					inPipeline = true
					pipelines++
				case `\endpipeline`:
					require.True(t, inPipeline, "line %d: \\endpipeline without \\startpipeline", i+1)
					inPipeline = false
				}
			}
			require.False(t, inTx, "the script ends inside a transaction")
			require.False(t, inPipeline, "the script ends inside a pipeline")
			require.Equal(t, tt.transactions, transactions)
			require.Equal(t, tt.pipelines, pipelines)
			require.Equal(t, tt.marker, strings.Contains(script, strings.TrimSpace(db.WriteIntentSQL)[:40]))
			require.Contains(t, script, "SET synchronous_commit = off;\n", "the venue's fill commits asynchronously, as paper.PoolConfig does")
			require.True(t, strings.HasSuffix(strings.TrimSuffix(script, "\\endpipeline\n"), ";\n"), "the last statement is not ended")

			for _, m := range variableRE.FindAllStringSubmatch(script, -1) {
				require.Contains(t, []string{"run", "client_id", "r"}, m[1], "pgbench would read :%s as a variable", m[1])
			}
		})
	}
}

func TestPgbenchScriptUnknownVariant(t *testing.T) {
	t.Parallel()
	_, err := PgbenchScript("claim-typo.sql")
	require.ErrorContains(t, err, "unknown pgbench script")
}

func TestBind(t *testing.T) {
	t.Parallel()
	args := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "K"}
	got, err := bind("\nSELECT $1, $11, $10 WHERE x = $1 AND y IN ($2, $3, $4, $5, $6, $7, $8, $9)\n", args...)
	require.NoError(t, err)
	require.Equal(t, "SELECT a, K, j WHERE x = a AND y IN (b, c, d, e, f, g, h, i);", got, "$11 must not be read as $1 then 1")

	_, err = bind("SELECT $1, $3", "a", "b", "c")
	require.ErrorContains(t, err, "no $2", "a parameter the statement dropped")
	_, err = bind("SELECT $1, $2", "a")
	require.ErrorContains(t, err, "has $2", "a parameter the statement gained")
}

// TestMinimalScriptDoesTheWorkOfOneSignal runs the throughput goal's
// reference under pgbench: every transaction it counts must have left one
// venue row, one settled trace, one order and one event, so the ratio
// compares hoox with real work.
func TestMinimalScriptDoesTheWorkOfOneSignal(t *testing.T) {
	binDir, err := localpg.FindBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries (pgbench): %v", err)
	}
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	res, err := RunPgbench(ctx, PgbenchConfig{BinDir: binDir, DatabaseURL: url, Clients: 2, Threads: 1,
		Duration: time.Second, Script: "minimal.sql"})
	require.NoError(t, err, "pgbench output: %s", res.Output)
	require.Positive(t, res.Transactions)
	require.Positive(t, res.TPS)

	pool := pgtest.OpenPool(t, url)
	var venue, traces, settled, orders, events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM minimal.f), (SELECT count(*) FROM minimal.t),
       (SELECT count(*) FROM minimal.t WHERE status = 'dispatched'), (SELECT count(*) FROM minimal.o),
       (SELECT count(*) FROM minimal.e)`).Scan(&venue, &traces, &settled, &orders, &events))
	// pgbench stops clients at -T; a transaction it cut short rolled back
	// and is not counted, but its autocommitted venue row stays.
	require.Equal(t, res.Transactions, traces, "one trace per completed script")
	require.Equal(t, traces, settled, "every trace settled")
	require.Equal(t, traces, orders)
	require.Equal(t, traces, events)
	require.GreaterOrEqual(t, venue, traces)
	require.LessOrEqual(t, venue, traces+2, "at most one venue row per client cut short")
}

// TestReferenceScriptDoesTheProtocolsWork runs the corrected reference
// (issue 21): every transaction pgbench counts left one intent, settled,
// one venue row, one settled trace, one order and one event.
func TestReferenceScriptDoesTheProtocolsWork(t *testing.T) {
	binDir, err := localpg.FindBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries (pgbench): %v", err)
	}
	url := pgtest.NewDatabase(t)
	ctx := t.Context()
	res, err := RunPgbench(ctx, PgbenchConfig{BinDir: binDir, DatabaseURL: url, Clients: 2, Threads: 1,
		Duration: time.Second, Script: "reference.sql"})
	require.NoError(t, err, "pgbench output: %s", res.Output)
	require.Positive(t, res.Transactions)

	pool := pgtest.OpenPool(t, url)
	var intents, settledIntents, venue, traces, settled, orders, events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM reference.i),
       (SELECT count(*) FROM reference.i WHERE outcome = 'dispatched'), (SELECT count(*) FROM reference.f),
       (SELECT count(*) FROM reference.t), (SELECT count(*) FROM reference.t WHERE status = 'dispatched'),
       (SELECT count(*) FROM reference.o), (SELECT count(*) FROM reference.e)`).
		Scan(&intents, &settledIntents, &venue, &traces, &settled, &orders, &events))
	require.Equal(t, res.Transactions, traces, "one trace per completed script")
	require.Equal(t, traces, settled, "every trace settled")
	require.Equal(t, traces, settledIntents, "every completed script settled its intent")
	require.Equal(t, traces, orders)
	require.Equal(t, traces, events)
	require.GreaterOrEqual(t, venue, traces)
	require.LessOrEqual(t, intents, traces+2, "at most one unsettled intent per client cut short")
	require.LessOrEqual(t, venue, traces+2, "at most one venue row per client cut short")
}

// A rate-limited run reports its transactions' latency distribution.
func TestPgbenchAtARateReportsLatencies(t *testing.T) {
	binDir, err := localpg.FindBinDir()
	if err != nil {
		t.Skipf("no PostgreSQL server binaries (pgbench): %v", err)
	}
	url := pgtest.NewDatabase(t)
	res, err := RunPgbench(t.Context(), PgbenchConfig{BinDir: binDir, DatabaseURL: url, Clients: 2, Threads: 1,
		Duration: time.Second, Script: "reference.sql", Rate: 50})
	require.NoError(t, err, "pgbench output: %s", res.Output)
	require.Positive(t, res.Latencies.Count)
	require.Positive(t, res.Latencies.P50)
	require.GreaterOrEqual(t, res.Latencies.P99, res.Latencies.P50)
}

// After PrewarmWAL(n), the cluster has at least n WAL segments ahead of
// its insert position, ready for reuse: the next n × 16 MB of WAL write
// into files that exist instead of zero-filling new ones.
func TestPrewarmWALLeavesSegmentsAhead(t *testing.T) {
	url := pgtest.NewDatabase(t)
	conn, err := pgx.Connect(t.Context(), url)
	require.NoError(t, err)
	defer conn.Close(t.Context())
	const ahead = `SELECT count(*) FROM pg_ls_waldir()
WHERE name ~ '^[0-9A-F]{24}$' AND name > pg_walfile_name(pg_current_wal_insert_lsn())`
	var before string
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_insert_lsn())").Scan(&before))

	require.NoError(t, PrewarmWAL(t.Context(), url, 6))

	var after string
	var n int
	require.NoError(t, conn.QueryRow(t.Context(), "SELECT pg_walfile_name(pg_current_wal_insert_lsn())").Scan(&after))
	require.NoError(t, conn.QueryRow(t.Context(), ahead).Scan(&n))
	require.Greater(t, after, before, "the insert position moved on by whole segments")
	require.GreaterOrEqual(t, n, 6, "segments ahead of the insert position after the checkpoint")
}
