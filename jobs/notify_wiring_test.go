package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
)

// A rejected order is notified on every configured channel: the jobs
// commit with the rejection (so a rolled-back claim notifies nothing), and
// River delivers them once started, never on the order's path.
func TestRejectedOrderIsNotifiedOnEveryChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	cfg := fake.Config()
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	sender, err := notify.New(cfg)
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier, NotifySender: sender})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: b.venues,
		Jobs: client, Notifier: notifier})
	t.Cleanup(gw.Close)

	// Refused before anything is recorded (kill switch off, but the venue
	// unreachable): the claim rolls back and no notification exists.
	b.paper.SetFaults(paper.Faults{Unreachable: true})
	_, err = gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"nope"}`))
	require.Error(t, err)
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify'"))

	b.paper.SetFaults(paper.Faults{Reject: "insufficient balance <&>"})
	_, err = gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"ETHUSDT","action":"sell","quantity":"2","trace_id":"refused"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Equal(t, db.TraceRejected, traceStatus(t, b.pool, "k:refused"))
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'rejected'"),
		"one job per channel, committed with the rejection")

	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(sctx))
	})
	for _, ch := range []string{notify.ChannelTelegram, notify.ChannelDiscord, notify.ChannelSlack} {
		reqs := fake.Await(t, ch, 1)
		require.Contains(t, reqs[0].Text(), "k:refused", "channel %s", ch)
		require.Contains(t, reqs[0].Text(), "insufficient balance", "channel %s", ch)
	}
}

// A kill switch change queues its notification in the change's own
// transaction: both commit, or (when queuing fails) neither does.
func TestKillSwitchChangeIsNotifiedWithTheChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	notifier, err := jobs.NewNotifier(fake.Config())
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier})
	require.NoError(t, err)
	admin := &api.Admin{Pool: b.pool, River: client, Notifier: notifier}

	_, err = db.SetKillSwitch(ctx, b.pool, true, "venue incident", "ops", admin.KillSwitchHook(true, "venue incident", "ops"))
	require.NoError(t, err)
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'kill_switch'"))

	failing := func(context.Context, pgx.Tx) error { return errors.New("queue down") }
	_, err = db.SetKillSwitch(ctx, b.pool, false, "", "ops", failing)
	require.Error(t, err)
	k, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.True(t, k.Engaged, "a change whose notification could not be queued did not happen")
}

// A repeat of the kill switch's current state — an operator's retried
// PUT, a second click — changes nothing and notifies nobody again: the
// channels hear "engaged" once per halt and "disengaged" only when
// trading resumes, never when it was already running. The repeat is
// still audited, with was_engaged.
func TestKillSwitchRepeatIsNotNotifiedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	notifier, err := jobs.NewNotifier(fake.Config())
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier})
	require.NoError(t, err)
	admin := &api.Admin{Pool: b.pool, River: client, Notifier: notifier}
	set := func(engaged bool) {
		t.Helper()
		_, err := db.SetKillSwitch(ctx, b.pool, engaged, "venue incident", "ops", admin.KillSwitchHook(engaged, "venue incident", "ops"))
		require.NoError(t, err)
	}
	notified := func() int64 {
		return count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'kill_switch'")
	}

	set(false) // never engaged: nothing resumes
	require.Zero(t, notified())
	set(true)
	set(true)
	require.EqualValues(t, 3, notified(), "one engage, one job per channel")
	set(false)
	set(false)
	require.EqualValues(t, 6, notified(), "one release, one job per channel")
	require.EqualValues(t, 5, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE trace_id = $1", db.KillSwitchTraceID),
		"every request is audited")
}

// writer is the one transaction that wrote every row query returns (its
// xmin); it fails when the rows came from several, or there are none. A
// row River has since worked carries its worker's xmin, so these tests
// leave the notification jobs unworked.
func writer(t *testing.T, pool *pgxpool.Pool, query string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT DISTINCT xmin::text FROM ("+query+") q", args...)
	require.NoError(t, err)
	xids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.Len(t, xids, 1, "rows of %q", query)
	return xids[0]
}

// queuedNotifications are the notification jobs of event, one per channel.
const queuedNotifications = `SELECT xmin, args FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = $1`

// requireNotifiedWith checks that event's notification is queued on every
// channel, its message holding each of want (a field of notify.Message and
// the text it contains), by the transaction that wrote traceID's event row:
// the two commit together or not at all.
func requireNotifiedWith(t *testing.T, pool *pgxpool.Pool, event, traceID string, want map[string]string) {
	t.Helper()
	require.EqualValues(t, 3, count(t, pool, "SELECT count(*) FROM ("+queuedNotifications+") q", event), "one job per channel")
	for field, text := range want {
		require.EqualValues(t, 3, count(t, pool, "SELECT count(*) FROM ("+queuedNotifications+") q WHERE strpos(args->'message'->>$2, $3) > 0",
			event, field, text), "the message's %s says %q", field, text)
	}
	require.Equal(t, writer(t, pool, "SELECT xmin FROM trace_events WHERE trace_id = $1 AND event = $2", traceID, event),
		writer(t, pool, queuedNotifications, event), "the notification is queued in the transaction that records the %s event", event)
}

// notifyingGateway is a gateway and an unstarted River client that queue
// notifications for a fake of all three channels.
func notifyingGateway(t *testing.T, b *testBundle) (*gateway.Service, *river.Client[pgx.Tx]) {
	t.Helper()
	notifier, err := jobs.NewNotifier(notifyfake.New(t).Config())
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: b.venues,
		Jobs: client, Notifier: notifier})
	t.Cleanup(gw.Close)
	return gw, client
}

// A lost answer is notified with the reconciling status the sender was
// told, in the claim's commit, beside the reconcile job.
func TestReconcilingIsNotifiedWithTheReconcile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	gw, _ := notifyingGateway(t, b)
	b.paper.SetFaults(paper.Faults{LoseAnswer: true})
	out, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"lost"}`))
	require.NoError(t, err)
	require.Equal(t, db.TraceReconciling, out.Status)

	requireNotifiedWith(t, b.pool, "reconciling", "k:lost", map[string]string{"trace_id": "k:lost", "detail": "outcome unknown",
		"client_order_id": "hx"})
	require.Equal(t, writer(t, b.pool, "SELECT xmin FROM river_job WHERE kind = 'reconcile'"), writer(t, b.pool, queuedNotifications, "reconciling"),
		"the notification commits with the reconcile job")
}

// A reconcile that ends a trace failed queues its notification in the
// transaction that fails the trace.
func TestReconcileFailureIsNotifiedWithTheFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	notifier, err := jobs.NewNotifier(notifyfake.New(t).Config())
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
		jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, b.venues, nil, nil).WithNotifier(notifier))
	// Not at the venue and too old to place: the trace fails.
	args := seedReconciling(t, b.pool, "k:stale", reconcileOrder, time.Now().Add(-time.Minute))

	_, err = w.Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:stale"))
	requireNotifiedWith(t, b.pool, "failed", "k:stale", map[string]string{"trace_id": "k:stale", "detail": "not sent",
		"client_order_id": reconcileOrder.ClientOrderID})
}

// A reconcile the sweeper ends failed (its job gone, no order at the venue)
// is notified like any failure, in the sweep's transaction.
func TestSweptFailureIsNotifiedWithTheFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	notifier, err := jobs.NewNotifier(notifyfake.New(t).Config())
	require.NoError(t, err)
	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{},
		jobs.NewSweepWorker(b.pool, jobs.Config{SweepGrace: time.Millisecond}, b.venues, nil, nil).WithNotifier(notifier))
	seedReconciling(t, b.pool, "k:orphan-notified", reconcileOrder, time.Now().Add(-time.Minute))

	_, err = w.Work(ctx, t, beginTx(t, b.pool), jobs.SweepArgs{}, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:orphan-notified"))
	requireNotifiedWith(t, b.pool, "failed", "k:orphan-notified", map[string]string{"trace_id": "k:orphan-notified",
		"detail": "reconcile job ended", "client_order_id": reconcileOrder.ClientOrderID})
}

// refusedKey is a venue that refuses hoox's API key on every placement.
type refusedKey struct{ *paper.Venue }

func (refusedKey) Place(context.Context, exchange.Order) (exchange.Report, error) {
	return exchange.Report{}, fmt.Errorf("code -2015 invalid api-key, ip, or permissions: %w: %w", exchange.ErrCredentials, exchange.ErrUnreachable)
}

// A venue refusing hoox's key is notified with its audit event, in one
// transaction, and at most once an hour while it stays refused.
func TestVenueCredentialsAreNotifiedWithTheirEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": refusedKey{b.paper}})
	gw, _ := notifyingGateway(t, b)
	for _, id := range []string{"key-1", "key-2"} {
		_, err := gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"`+id+`"}`))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, codes.Unavailable, ge.Code, "nothing was placed")
	}
	requireNotifiedWith(t, b.pool, "venue_credentials", "admin:venue:paper", map[string]string{"exchange": "paper",
		"detail": "invalid api-key"})
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'venue_credentials'"),
		"the second refusal inside the hour is logged, not notified again")
}

// An account with a testnet pair (HOOX_<VENUE>_TESTNET_API_KEY) holds two
// keys. A refused testnet key (a test signal) is audited, noted and
// notified as the testnet key's, and does not take the live key's hourly
// alert: the live key refused a moment later — live signals answered 503
// until it is fixed — is notified on its own.
func TestRefusedTestnetKeyDoesNotSilenceTheLiveKeysAlert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistryOf(
		exchange.Entry{Name: "paper", Live: b.paper},
		exchange.Entry{Name: "binance", Live: refusedKey{b.paper}, Test: refusedKey{b.paper}})
	gw, _ := notifyingGateway(t, b)
	for _, body := range []string{
		`{"exchange":"binance","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"t-1","test":true}`,
		`{"exchange":"binance","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"live-1"}`,
	} {
		_, err := gw.Execute(ctx, input(t, body))
		var ge *gateway.Error
		require.ErrorAs(t, err, &ge)
		require.Equal(t, codes.Unavailable, ge.Code)
	}
	require.EqualValues(t, 2, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'venue_credentials'"),
		"the live key's refusal is its own alert, not swallowed by the testnet key's an instant earlier")
	for trace, mode := range map[string]string{"admin:venue:binance:testnet": "test", "admin:venue:binance": ""} {
		require.Equal(t, writer(t, b.pool, "SELECT xmin FROM trace_events WHERE trace_id = $1 AND event = 'venue_credentials'", trace),
			writer(t, b.pool, queuedNotifications+" AND coalesce(args->'message'->>'mode', '') = $2", "venue_credentials", mode),
			"%s is notified in its event's transaction, on every channel", trace)
	}
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM ("+queuedNotifications+") q WHERE args->'message'->>'mode' = 'test' "+
		"AND strpos(args->'message'->>'detail', 'refused hoox''s testnet API key') > 0", "venue_credentials"),
		"the testnet key's message says it is the testnet key")
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM ("+queuedNotifications+") q WHERE args->'message'->>'mode' IS NULL "+
		"AND strpos(args->'message'->>'detail', 'refused hoox''s API key') > 0", "venue_credentials"),
		"the live key's message names the live key")
	var status exchange.VenueStatus
	for _, v := range b.venues.Describe() {
		if v.Name == "binance" {
			status = v
		}
	}
	require.NotNil(t, status.LastError, "the live key's refusal is the account's last error")
	require.NotNil(t, status.TestnetLastError, "the testnet key's refusal is kept apart")
}
