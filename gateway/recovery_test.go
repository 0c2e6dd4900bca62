package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/signal"
)

// memBundle is a gateway in front of a venue outside Postgres.
type memBundle struct {
	pool  *pgxpool.Pool
	venue *memVenue
	jobs  *jobRecorder
	svc   *gateway.Service
}

// crash is what the AfterVenue hook panics with to stand in for hoox dying
// between the venue's answer and the commit.
type crash struct{}

func setupMem(t *testing.T, url string, venue *memVenue, afterVenue func(string)) *memBundle {
	t.Helper()
	return setupMemWith(t, url, venue, memOpts{afterVenue: afterVenue})
}

// memOpts change setupMem's gateway: a claim pool of at most maxConns
// connections (0: pgx's default), a dedup window (0: the default).
type memOpts struct {
	maxConns   int
	window     time.Duration
	lockWait   time.Duration
	afterVenue func(string)
	// deployment is the gateway's client order ID namespace.
	deployment string
	// skew offsets the gateway's clock (Config.Timing.Now) from the system's.
	skew time.Duration
}

func setupMemWith(t *testing.T, url string, venue *memVenue, o memOpts) *memBundle {
	t.Helper()
	open := func() *pgxpool.Pool { return pgtest.OpenPool(t, url) }
	claimURL := url
	if o.maxConns > 0 {
		switch {
		case !strings.Contains(url, "://"):
			claimURL += fmt.Sprintf(" pool_max_conns=%d", o.maxConns)
		case strings.Contains(url, "?"):
			claimURL += fmt.Sprintf("&pool_max_conns=%d", o.maxConns)
		default:
			claimURL += fmt.Sprintf("?pool_max_conns=%d", o.maxConns)
		}
	}
	cfg := gateway.DefaultConfig()
	if o.window > 0 {
		cfg.DedupWindow = o.window
	}
	if o.lockWait > 0 {
		cfg.Timing.LockWait = o.lockWait
	}
	if o.skew != 0 {
		cfg.Timing.Now = func() time.Time { return time.Now().Add(o.skew) }
	}
	b := &memBundle{pool: pgtest.OpenPool(t, claimURL), venue: venue, jobs: &jobRecorder{}}
	b.svc = gateway.New(cfg, gateway.Deps{Pool: b.pool, MarkerPool: open(), Jobs: b.jobs,
		Venues:     exchange.NewRegistry(map[string]exchange.Venue{"mem": venue}),
		AfterVenue: o.afterVenue, Deployment: o.deployment})
	t.Cleanup(b.svc.Close)
	if venue.gate != nil {
		// Runs before Close (cleanups run last in, first out): a test
		// that failed with orders still at the gate must not hang there.
		t.Cleanup(venue.open)
	}
	return b
}

// crashOnce returns an AfterVenue hook that "crashes" the first attempt.
func crashOnce() func(string) {
	crashed := false
	return func(string) {
		if !crashed {
			crashed = true
			panic(crash{})
		}
	}
}

// executeCrashing runs in and requires that the attempt died in the hook.
func executeCrashing(t *testing.T, svc *gateway.Service, in gateway.Input) {
	t.Helper()
	require.PanicsWithValue(t, crash{}, func() { _, _ = svc.Execute(context.Background(), in) })
}

func requireCode(t *testing.T, err error, code string) *gateway.Error {
	t.Helper()
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, code, ge.Code, ge.Detail)
	return ge
}

// A resend after hoox died between the venue's answer and the commit must
// find the order the dead attempt placed, in every key mode. Window mode
// matters most: the resend gets a new trace ID (a new arrival time), and
// only the intent, keyed on the fingerprint's lock key, links it to the
// dead attempt. The venue accepts a filled order's ID again, so anything
// short of a lookup places a second order.
func TestResendAfterCrashAdoptsTheDeadAttemptsOrder(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"ClientKey": `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"crash-k"}`,
		"Derived":   `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","timestamp":"2026-11-30T10:00:00Z"}`,
		"Window":    `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, crashOnce())
			ctx := context.Background()

			first := input(t, body)
			executeCrashing(t, b.svc, first)
			require.Equal(t, 1, b.venue.count(), "the venue took the order")
			require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"), "the claim died with the attempt")
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"),
				"the attempt's intent is durable and open")

			// A fresh arrival, a moment later: in window mode, a new trace ID.
			resend, err := gateway.ParseInput([]byte(body), "", time.Now().Add(time.Millisecond))
			require.NoError(t, err)
			out, err := b.svc.Execute(ctx, resend)
			require.NoError(t, err)
			require.Equal(t, db.TraceDispatched, out.Status)
			require.Equal(t, 1, b.venue.count(), "the resend adopted the order instead of placing another")
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
			require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'adopted'"))
			require.Zero(t, count(t, b.pool, "SELECT count(*) FROM dispatch_intents WHERE outcome IS NULL"))

			// Where an operator finds the story: with a key, under one trace
			// ID; in window mode the dead attempt's dispatch_started sits
			// under its own arrival's trace ID.
			if name == "Window" {
				require.NotEqual(t, first.Trace.ID, resend.Trace.ID)
				require.Equal(t, []string{"dispatch_started"}, eventsOf(t, b.pool, first.Trace.ID))
				require.Equal(t, []string{"received", "adopted", "dispatched"}, eventsOf(t, b.pool, resend.Trace.ID))
			} else {
				require.Equal(t, first.Trace.ID, resend.Trace.ID)
				require.Equal(t, []string{"dispatch_started", "received", "adopted", "dispatched"}, eventsOf(t, b.pool, resend.Trace.ID))
			}

			_, err = b.svc.Execute(ctx, input(t, body))
			requireCode(t, err, codes.Duplicate)
			require.Equal(t, 1, b.venue.count())
		})
	}
}

// hoox died after a request the venue never took: the resend finds the open
// intent, the venue holds nothing and its accept window has closed, so the
// resend places the order — once, under the dead attempt's client order ID.
// (Only at a venue that refuses late requests: see
// TestResendPastTheWindowIsNotResentToAVenueThatMayFillLate.)
func TestResendAfterCrashPlacesAnOrderTheVenueNeverTook(t *testing.T) {
	t.Parallel()
	venue := &memVenue{dropNext: true, refusesLate: true}
	b := setupMem(t, pgtest.NewDatabase(t), venue, crashOnce())
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"dropped"}`

	executeCrashing(t, b.svc, input(t, body))
	require.Zero(t, venue.count())
	out, err := b.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, venue.count())
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM dispatch_intents"), "the same client order ID, sent again")
	require.Equal(t, []string{"dispatch_started", "received", "dispatch_started", "dispatched"}, eventsOf(t, b.pool, "k:dropped"))
}

// A panic while dispatching must roll the claim back at once: a connection
// left idle in its transaction would hold the trace's lock, and every
// repeat would answer in_progress until a restart.
func TestPanicInDispatchReleasesTheClaim(t *testing.T) {
	t.Parallel()
	venue := &memVenue{panicNext: true, refusesLate: true}
	b := setupMem(t, pgtest.NewDatabase(t), venue, nil)
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"boom"}`

	require.Panics(t, func() { _, _ = b.svc.Execute(context.Background(), input(t, body)) })
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND state LIKE 'idle in transaction%'`), "no connection holds the claim")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"))

	out, err := b.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err, "the retry executes instead of waiting on a leaked lock")
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, venue.count())
}

// After a crash, a resend whose lookup does not see the order yet (lookups
// lag placements) must not place again while the dead request's accept
// window is open: the outcome is unknown, so the trace reconciles.
func TestResendInsideTheAcceptWindowReconcilesInsteadOfPlacing(t *testing.T) {
	t.Parallel()
	venue := &memVenue{window: time.Hour, lookupLag: time.Hour}
	b := setupMem(t, pgtest.NewDatabase(t), venue, crashOnce())
	body := `{"exchange":"mem","symbol":"ETHUSDT","action":"sell","quantity":"3","trace_id":"lagging"}`

	executeCrashing(t, b.svc, input(t, body))
	out, err := b.svc.Execute(context.Background(), input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)
	require.Equal(t, 1, venue.count(), "nothing placed while the first request may still be accepted")
	require.Equal(t, 1, b.jobs.count(), "a reconcile job is queued with the trace")
	require.Equal(t, db.IntentReconciling, intentOutcome(t, b.pool))
	require.Equal(t, []string{"dispatch_started", "received", "reconciling"}, eventsOf(t, b.pool, "k:lagging"),
		"the resend sends nothing, so it starts no dispatch of its own")
}

// The same client key for a different signal after a crash must not adopt
// the first signal's order.
func TestKeyReusedAfterCrashIsRefused(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, crashOnce())
	first := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"reused"}`
	other := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"2","trace_id":"reused"}`

	executeCrashing(t, b.svc, input(t, first))
	_, err := b.svc.Execute(context.Background(), input(t, other))
	requireCode(t, err, codes.KeyReused)
	require.Equal(t, 1, b.venue.count())
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"))

	// The first signal's own resend still adopts its order.
	out, err := b.svc.Execute(context.Background(), input(t, first))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, b.venue.count())
}

// When the venue already holds a different order under the client order ID
// hoox would use (and no intent says so), the duplicate refusal leads to a
// lookup that must not adopt it.
func TestVenueHoldingADifferentOrderIsKeyReused(t *testing.T) {
	t.Parallel()
	b := setupMem(t, pgtest.NewDatabase(t), &memVenue{}, nil)
	in := input(t, `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","price":"100","trace_id":"taken"}`)
	b.venue.hold(exchange.Order{ClientOrderID: signal.ClientOrderID("", in.Trace.LockKey, 0), Symbol: "BTCUSDT", Side: "buy",
		OrderType: "limit", Quantity: in.Signal.Quantity.Add(in.Signal.Quantity)}, exchange.StatusOpen)

	_, err := b.svc.Execute(context.Background(), in)
	requireCode(t, err, codes.KeyReused)
	require.Equal(t, 1, b.venue.count(), "nothing placed")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_ids"))
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, db.IntentKeyReused, intentOutcome(t, b.pool))
}

// The intent must survive a Postgres crash right after the venue accepted
// the order. Postgres is crashed (immediate stop, WAL not yet written lost)
// between the venue's answer and the commit, with the WAL writer slowed so
// that an asynchronous commit would surely be lost; the resend after the
// restart must find the intent and adopt the order.
func TestIntentSurvivesAPostgresCrashAfterTheVenueAccepted(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crashes a Postgres cluster")
	}
	ctx := context.Background()
	cluster := pgtest.NewCluster(t)
	admin, err := pgxpool.New(ctx, cluster.DatabaseURL)
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "ALTER SYSTEM SET wal_writer_delay = '10s'")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	admin.Close()

	venue := &memVenue{}
	crashed := false
	doomed := setupMem(t, cluster.DatabaseURL, venue, func(string) {
		if !crashed {
			crashed = true
			require.NoError(t, cluster.Crash(ctx))
		}
	})
	body := `{"exchange":"mem","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"pg-crash"}`
	_, err = doomed.svc.Execute(ctx, input(t, body))
	requireCode(t, err, codes.Unavailable)
	require.Equal(t, 1, venue.count(), "the venue holds the order")

	require.NoError(t, cluster.Start(ctx))
	b := setupMem(t, cluster.DatabaseURL, venue, nil)
	out, err := b.svc.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, out.Status)
	require.Equal(t, 1, venue.count(), "the resend adopted the order: the intent survived the crash")
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'adopted'"))
}

// eventsOf lists traceID's audit events, oldest first.
func eventsOf(t *testing.T, pool *pgxpool.Pool, traceID string) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT event FROM trace_history WHERE trace_id = $1 ORDER BY id", traceID)
	require.NoError(t, err)
	events, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return events
}

func intentOutcome(t *testing.T, pool *pgxpool.Pool) db.IntentOutcome {
	t.Helper()
	var outcome *db.IntentOutcome
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT outcome FROM dispatch_intents").Scan(&outcome))
	if outcome == nil {
		return ""
	}
	return *outcome
}
