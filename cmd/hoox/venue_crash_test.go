package main

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/venuefake"
	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// sweeperFinishesLegs starts a hoox serve whose sweeper runs every second
// on dbURL and awaits the n legs of trace traceID recorded dispatched (why
// says what they are); it returns the running process.
func sweeperFinishesLegs(t *testing.T, dbURL string, env []string, traceID string, n int, why string) *serveProcess {
	t.Helper()
	survivor, _ := startVenueServe(t, dbURL, append(env, "HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=1s")...)
	pool := pgtest.OpenPool(t, dbURL)
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM order_legs WHERE trace_id = $1 AND outcome = 'dispatched'", traceID) == n
	}, 60*time.Second, 100*time.Millisecond, why)
	return survivor
}

// killedMidSignal sends body to a `hoox serve` started with the drill
// setting (HOOX_DRILL_CRASH_AFTER_VENUE: SIGKILL between the venue's answer
// and the commit; HOOX_DRILL_CRASH_AFTER_LEG: between a leg's venue answer
// and its record) and waits for the drill's kill: the connection dies with
// the process.
func killedMidSignal(t *testing.T, dbURL string, env []string, drill, body string) {
	t.Helper()
	doomed, _ := startVenueServe(t, dbURL, append(env, drill+"=true")...)
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+body), "the connection dies with the process")
	var exit *exec.ExitError
	require.ErrorAs(t, <-waitOr(doomed.exited), &exit, "hoox was killed")
}

// crashAfterVenue sends body to a `hoox serve` that SIGKILLs itself between
// the venue's answer and the commit, and checks what the crash left: the
// venue holds the order, Postgres holds no claim.
func crashAfterVenue(t *testing.T, dbURL string, env []string, body string, fake fakeVenue) fakeOrder {
	t.Helper()
	pool := pgtest.OpenPool(t, dbURL)
	killedMidSignal(t, dbURL, env, "HOOX_DRILL_CRASH_AFTER_VENUE", body)
	held := fake.Orders()
	require.Len(t, held, 1, "the venue holds the order")
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"), "the claim died uncommitted")
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	return held[0]
}

// Crash between the venue's answer and the commit, then the sender resends:
// the resend looks the order up under the same client order ID and adopts
// it. On Binance a filled order's client ID is free again, so a resend that
// placed without looking would make a second order.
func TestVenueCrashDrillThenResendAdoptsTheOrder(t *testing.T) {
	t.Parallel()
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		env := vc.envFor(fake)
		body := vc.signal(`"trace_id":"crash-1"`)
		held := crashAfterVenue(t, dbURL, env, body, fake)

		survivor, _ := startVenueServe(t, dbURL, env...)
		r := apptest.Post(t, survivor.url, body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Len(t, fake.Orders(), 1, "the resend adopted the order instead of placing another")
		require.Equal(t, held.ClientOrderID, r.Str("order", "client_order_id"))
		require.Equal(t, held.ExchangeOrderID, r.Str("order", "exchange_order_id"))
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:crash-1' AND event = 'dispatched' AND detail->>'adopted' = 'true'"))
		again := apptest.Post(t, survivor.url, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Len(t, fake.Orders(), 1)
	})
}

// Crash between the venue's answer and the commit, and nobody resends (as
// TradingView does not after a reset connection): the sweeper finds the
// intent, asks the venue, records the order and creates the trace, so a
// later resend is a 409 and the venue still holds one order.
func TestVenueCrashDrillWithoutResendIsSwept(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits out the venue's accept window (~17 s) before the sweeper asks")
	}
	type rig struct {
		vc       venueCase
		fake     fakeVenue
		pool     *pgxpool.Pool
		survivor *serveProcess
		held     fakeOrder
	}
	var rigs []rig
	const body = `"trace_id":"swept-1"`
	for _, vc := range venueCases {
		fake := vc.newFake(t)
		dbURL := pgtest.NewDatabase(t)
		env := vc.envFor(fake)
		held := crashAfterVenue(t, dbURL, env, vc.signal(body), fake)
		survivor, _ := startVenueServe(t, dbURL, append(env, "HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=1s")...)
		rigs = append(rigs, rig{vc, fake, pgtest.OpenPool(t, dbURL), survivor, held})
	}
	// The sweeper asks only once the adapter's accept window (recvWindow +
	// lookup lag + clock margin, ~17 s) has passed since the send; the
	// venues wait it out together.
	conds := map[string]func() bool{}
	for _, r := range rigs {
		conds[r.vc.name] = func() bool {
			return apptest.Count(t, r.pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:swept-1' AND status = 'dispatched'") == 1
		}
	}
	awaitAll(t, 60*time.Second, "the sweeper recorded the order", conds)

	for _, r := range rigs {
		t.Run(r.vc.name, func(t *testing.T) {
			require.Equal(t, r.held.ExchangeOrderID, apptest.Text(t, r.pool, "SELECT exchange_order_id FROM orders WHERE trace_id = 'k:swept-1'"))
			require.Equal(t, 1, apptest.Count(t, r.pool, "SELECT count(*) FROM orders"))
			require.Equal(t, 1, apptest.Count(t, r.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:swept-1' AND event = 'swept'"))
			resend := apptest.Post(t, r.survivor.url, r.vc.signal(body))
			require.Equal(t, http.StatusConflict, resend.Status, resend.Raw)
			require.Equal(t, "duplicate", resend.Str("code"))
			require.Equal(t, "dispatched", resend.Str("original", "status"))
			require.Len(t, r.fake.Orders(), 1, "nothing placed twice")
		})
	}
}

// A window-mode signal (no key, no timestamp) through the crash drill and a
// resend: the resend arrives with a new w:…:<ms> trace ID, but its client
// order ID comes from what it shares with the first attempt, so it finds
// and adopts the order.
func TestVenueWindowModeCrashDrillThenResendPlacesOneOrder(t *testing.T) {
	t.Parallel()
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		dbURL := pgtest.NewDatabase(t)
		pool := pgtest.OpenPool(t, dbURL)
		env := vc.envFor(fake)
		body := vc.signal(`"strategy":"window-drill"`)
		held := crashAfterVenue(t, dbURL, env, body, fake)

		survivor, _ := startVenueServe(t, dbURL, env...)
		r := apptest.Post(t, survivor.url, body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.True(t, strings.HasPrefix(r.Str("trace_id"), "w:"), r.Raw)
		require.Equal(t, held.ClientOrderID, r.Str("order", "client_order_id"))
		require.Len(t, fake.Orders(), 1, "one order at the venue")
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
		again := apptest.Post(t, survivor.url, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Len(t, fake.Orders(), 1)
	})
}

// Issue 9 item 5 at process level: Postgres dies (pg_ctl stop -m immediate)
// right after the venue accepted the order, while its answer is still on
// the way. The attempt's intent committed synchronously before the venue
// call, so it survives the crash; the resend after the restart finds it,
// looks the order up and adopts it. (Were the intent asynchronous, it would
// be lost with the WAL the slowed WAL writer had not written, and on
// Binance the resend would place the same client order ID a second time.)
func TestVenuePostgresCrashAfterTheVenueAcceptedThenResendAdopts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crashes a Postgres cluster per venue")
	}
	eachVenue(t, func(t *testing.T, vc venueCase, fake fakeVenue) {
		ctx := t.Context()
		cluster := pgtest.NewCluster(t)
		admin, err := pgxpool.New(ctx, cluster.DatabaseURL)
		require.NoError(t, err)
		_, err = admin.Exec(ctx, "ALTER SYSTEM SET wal_writer_delay = '10s'")
		require.NoError(t, err)
		_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
		require.NoError(t, err)
		admin.Close()

		srv, _ := startVenueServe(t, cluster.DatabaseURL, append(vc.envFor(fake), "HOOX_VENUE_TIMEOUT=2s")...)
		body := vc.signal(`"trace_id":"pg-crash-1"`)
		// The venue books the order and holds its answer; Postgres is
		// crashed in that moment.
		fake.Inject(venuefake.HangAfterAccept)
		answered := make(chan int, 1)
		go func() { answered <- apptest.SendOnce(srv.url + "|" + body) }()
		require.Eventually(t, func() bool { return len(fake.Orders()) == 1 }, 20*time.Second, 5*time.Millisecond,
			"the venue accepted the order")
		require.NoError(t, cluster.Crash(ctx))
		st := <-answered
		require.NotContains(t, []int{http.StatusOK, http.StatusAccepted}, st,
			"with Postgres gone the attempt cannot record anything, so it cannot claim an outcome")

		require.NoError(t, cluster.Start(ctx))
		require.Eventually(t, func() bool {
			resp, err := apptest.Client.Get(srv.url + "/readyz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}, 30*time.Second, 50*time.Millisecond)

		held := fake.Orders()
		r := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusOK, r.Status, r.Raw)
		require.Len(t, fake.Orders(), 1, "the resend adopted the order: the intent survived the crash")
		require.Equal(t, held[0].ExchangeOrderID, r.Str("order", "exchange_order_id"))
		pool := pgtest.OpenPool(t, cluster.DatabaseURL)
		require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:pg-crash-1' AND event = 'dispatched' AND detail->>'adopted' = 'true'"))
		again := apptest.Post(t, srv.url, body)
		require.Equal(t, http.StatusConflict, again.Status, again.Raw)
		require.Len(t, fake.Orders(), 1)
	})
}
