package jobs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// testBundle is one fresh database with the gateway's pool, a separate pool
// for the paper venue (as in production), and the venue itself.
type testBundle struct {
	url    string
	pool   *pgxpool.Pool
	paper  *paper.Venue
	venues *exchange.Registry
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	url := pgtest.NewDatabase(t)
	b := &testBundle{url: url, pool: pgtest.OpenPool(t, url)}
	b.paper = paper.New(paper.Config{Pool: pgtest.OpenPool(t, url)})
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": b.paper})
	return b
}

// startClient starts a River client with hoox's workers and stops it when
// the test ends.
func startClient(t *testing.T, b *testBundle, cfg jobs.Config) *river.Client[pgx.Tx] {
	t.Helper()
	client := newClient(t, b, cfg)
	start(t, client)
	return client
}

// newClient is a River client for b's venues, not started.
func newClient(t *testing.T, b *testBundle, cfg jobs.Config) *river.Client[pgx.Tx] {
	t.Helper()
	client, err := jobs.NewClient(b.pool, cfg, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	return client
}

// start starts client (a client made by jobs.NewClient can insert jobs
// before it works them) and stops it when the test ends.
func start(t *testing.T, client *river.Client[pgx.Tx]) {
	t.Helper()
	require.NoError(t, client.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(ctx))
	})
}

// seedTrace inserts a settled trace received a day ago that expires ttl
// from now (negative: already expired).
func seedTrace(t *testing.T, pool *pgxpool.Pool, traceID string, status db.TraceStatus, ttl time.Duration) {
	t.Helper()
	now := time.Now()
	testfactory.Trace(t, pool, testfactory.TraceOpts{ID: traceID, Status: status,
		ReceivedAt: now.Add(-24 * time.Hour), UpdatedAt: now, ExpiresAt: now.Add(ttl)})
}

// seedOrder inserts a filled order under traceID.
func seedOrder(t *testing.T, pool *pgxpool.Pool, traceID, clientOrderID string) {
	t.Helper()
	testfactory.Order(t, pool, testfactory.OrderOpts{TraceID: traceID, ClientOrderID: clientOrderID, Quantity: "1"})
}

func count(t *testing.T, pool *pgxpool.Pool, query string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

func traceExists(t *testing.T, pool *pgxpool.Pool, traceID string) bool {
	t.Helper()
	return count(t, pool, `SELECT count(*) FROM trace_ids WHERE trace_id = $1`, traceID) == 1
}

func traceStatus(t *testing.T, pool *pgxpool.Pool, traceID string) db.TraceStatus {
	t.Helper()
	var s db.TraceStatus
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT status FROM trace_ids WHERE trace_id = $1`, traceID).Scan(&s))
	return s
}

// event is one audit row of a trace, detail decoded.
type event struct {
	Event  string
	Detail map[string]any
}

func events(t *testing.T, pool *pgxpool.Pool, traceID string) []event {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT event, detail FROM trace_history WHERE trace_id = $1 ORDER BY id`, traceID)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (event, error) {
		var e event
		var raw []byte
		if err := row.Scan(&e.Event, &raw); err != nil {
			return e, err
		}
		return e, json.Unmarshal(raw, &e.Detail)
	})
	require.NoError(t, err)
	return out
}

func eventNames(es []event) []string {
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.Event
	}
	return names
}

// requireLogged fails unless logs hold a record with message msg at level
// whose attributes include attrs.
func requireLogged(t *testing.T, logs *testutil.LogBuffer, level slog.Level, msg string, attrs map[string]any) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if rec[slog.MessageKey] != msg || rec[slog.LevelKey] != level.String() {
			continue
		}
		matches := true
		for k, v := range attrs {
			if rec[k] != v {
				matches = false
			}
		}
		if matches {
			return
		}
	}
	require.Failf(t, "log record missing", "no %s %q with %v in:\n%s", level, msg, attrs, logs.String())
}

// counterOf reads one series of a counter vector.
func counterOf(t *testing.T, c *prometheus.CounterVec, labels ...string) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, c.WithLabelValues(labels...).(prometheus.Metric).Write(&out))
	return out.GetCounter().GetValue()
}

// sweepUntil runs the sweeper as River would (a job in a transaction,
// rolled back after: the sweeper writes through its own pool) until done
// holds, at most maxSweeps times, and returns how many sweeps ran. The
// sweeper runs every few seconds in production, and on a busy machine one
// sweep can leave an item for the next (a server-time resync after a
// fake's clock jumped, a lock wait cut at its bound): a test asks for the
// outcome within a bounded number of sweeps, not after an exact count.
func sweepUntil(t *testing.T, pool *pgxpool.Pool, sweeper *jobs.SweepWorker, done func() bool) int {
	t.Helper()
	ctx := context.Background()
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, sweeper)
	sweeps := 0
	for ; sweeps < maxSweeps && !done(); sweeps++ {
		time.Sleep(5 * time.Millisecond) // past the tests' 1-ms SweepGrace: the item is due again
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		_, err = w.Work(ctx, t, tx, jobs.SweepArgs{}, nil)
		_ = tx.Rollback(ctx)
		require.NoError(t, err)
	}
	return sweeps
}

// maxSweeps bounds sweepUntil: an item the sweeper should settle and has
// not after this many sweeps was left as it was.
const maxSweeps = 30
