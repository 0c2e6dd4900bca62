package jobs_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
)

// followBundle is a gateway on the paper venue whose follow jobs are
// queued (not worked) by a River client that is not started, and a
// rivertest worker that runs them one at a time.
type followBundle struct {
	*testBundle
	gw     *gateway.Service
	worker *rivertest.Worker[jobs.FollowArgs, pgx.Tx]
}

func setupFollow(t *testing.T) *followBundle {
	t.Helper()
	b := setup(t)
	return followOn(t, b, b.venues, nil)
}

// followOn is a gateway over venues whose open orders are followed: its
// River client queues follow jobs, and worker works them (notifying
// through notifier, when not nil).
func followOn(t *testing.T, b *testBundle, venues *exchange.Registry, notifier *jobs.Notifier) *followBundle {
	t.Helper()
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: venues, Jobs: client})
	t.Cleanup(gw.Close)
	w := jobs.NewFollowWorker(b.pool, jobs.Config{}, venues, nil, notifier)
	return &followBundle{testBundle: b, gw: gw, worker: rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)}
}

// futuresFollowing is a test bundle, a Binance fake, a registry with
// its USDⓈ-M venue and a gateway whose orders follow jobs pick up: the
// start of every USDⓈ-M follow-on test.
func futuresFollowing(t *testing.T) (*testBundle, *binancefake.Server, *exchange.Registry, *followBundle) {
	t.Helper()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{})
	venues := binanceVenues(t, f, binance.MarketFutures)
	return b, f, venues, followOn(t, b, venues, nil)
}

// binanceVenues are the Binance markets of fake f, each under its venue
// name (binance, binance-futures).
func binanceVenues(t *testing.T, f *binancefake.Server, markets ...binance.Market) *exchange.Registry {
	t.Helper()
	m := map[string]exchange.Venue{}
	for _, market := range markets {
		v, err := binance.New(binance.Config{Market: market, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL})
		require.NoError(t, err)
		name := "binance"
		if market == binance.MarketFutures {
			name = "binance-futures"
		}
		m[name] = v
	}
	return exchange.NewRegistry(m)
}

// work runs the job once in a transaction of its own, rolled back at once
// (the worker writes through the pool, as in production): a test that
// runs many must not hold a connection per run.
func (b *followBundle) work(t *testing.T, args jobs.FollowArgs) (*rivertest.WorkResult, error) {
	t.Helper()
	tx, err := b.pool.Begin(context.Background())
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	return b.worker.Work(context.Background(), t, tx, args, nil)
}

// queuedFollow is the follow job the gateway queued for traceID's own
// order (its exits' jobs are queuedFollowOf theirs).
func (b *followBundle) queuedFollow(t *testing.T, traceID string) jobs.FollowArgs {
	t.Helper()
	return b.queuedFollowWhere(t, `args->>'trace_id' = $1 AND args->>'client_order_id' NOT IN (SELECT client_order_id FROM order_legs)`, traceID)
}

// queuedFollowOf is the follow job queued for the order clientOrderID.
func (b *followBundle) queuedFollowOf(t *testing.T, clientOrderID string) jobs.FollowArgs {
	t.Helper()
	return b.queuedFollowWhere(t, `args->>'client_order_id' = $1`, clientOrderID)
}

func (b *followBundle) queuedFollowWhere(t *testing.T, where string, arg string) jobs.FollowArgs {
	t.Helper()
	var args jobs.FollowArgs
	rows, err := b.pool.Query(context.Background(), `SELECT args FROM river_job WHERE kind = 'follow' AND `+where, arg)
	require.NoError(t, err)
	all, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	require.NoError(t, err)
	require.Len(t, all, 1, "one follow job per open order")
	require.NoError(t, json.Unmarshal(all[0], &args))
	return args
}

// A resting order snoozes its job, longer the older the order (never
// longer than FollowMaxInterval); a venue that cannot be asked snoozes it
// too, without an error that would spend an attempt; once filled, the
// row, its event and the job's end come together.
func TestFollowWorkerSnoozesUntilTheOrderEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","price":"90","trace_id":"rest"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	args := b.queuedFollow(t, "k:rest")
	require.Equal(t, out.Order.ClientOrderID, args.ClientOrderID)

	res, err := b.work(t, args)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind, "still resting: look again later")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:rest' AND event LIKE 'order_%'"),
		"nothing changed, nothing recorded")

	// A resting order days old is asked about every FollowMaxInterval.
	_, err = b.pool.Exec(ctx, `UPDATE orders SET created_at = now() - interval '3 days' WHERE trace_id = 'k:rest'`)
	require.NoError(t, err)
	res, err = b.work(t, args)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	require.WithinDuration(t, time.Now().Add(jobs.FollowMaxInterval), res.Job.ScheduledAt, 30*time.Second)

	b.paper.SetFaults(paper.Faults{Unreachable: true})
	res, err = b.work(t, args)
	require.NoError(t, err, "an unreachable venue is asked again later, not an error")
	require.Equal(t, river.EventKindJobSnoozed, res.EventKind)
	b.paper.SetFaults(paper.Faults{})

	n, err := b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("89"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n)
	res, err = b.work(t, args)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind, "the order ended: the job ends")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE trace_id = 'k:rest' AND status = 'filled'
		AND filled_quantity = 2 AND avg_price = 90 AND fill_price = 90 AND updated_at IS NOT NULL AND final_at IS NOT NULL`))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:rest' AND event = 'order_filled'"))

	// Run again (a duplicate delivery): nothing more is recorded.
	res, err = b.work(t, args)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE event = 'order_filled'"))
}

// The follow horizon of an entry is its trace: once the purge (or a
// release) removed it, the job looks once more. A fill since the last look
// is recorded as usual; an order still open is recorded as no longer
// followed (unfollowed_at, an order_unfollowed event with the reason) and
// notified (order_unfollowed is a default event) in the same commit, since
// nobody watches it from then on; the row keeps its last known state.
func TestFollowAtTheTracesPurgeLooksOnceMoreThenUnfollowsAndNotifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	cfg := fake.Config()
	cfg.Events = nil // the defaults
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	fb := followOn(t, b, b.venues, notifier)
	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","price":"90","trace_id":"old"}`))
	require.NoError(t, err)
	_, err = fb.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"2","price":"1500","trace_id":"resting"}`))
	require.NoError(t, err)
	filledArgs, restingArgs := fb.queuedFollow(t, "k:old"), fb.queuedFollow(t, "k:resting")
	_, err = b.pool.Exec(ctx, `DELETE FROM trace_ids WHERE trace_id IN ('k:old', 'k:resting')`)
	require.NoError(t, err)

	// Filled at the venue since the last look: recorded filled.
	_, err = b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("80"))
	require.NoError(t, err)
	res, err := fb.work(t, filledArgs)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:old' AND status = 'filled' AND unfollowed_at IS NULL"),
		"the fill since the last look is recorded")
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:old' AND event = 'order_filled'"))

	// Still open: no longer followed, said so, and notified.
	res, err = fb.work(t, restingArgs)
	require.NoError(t, err)
	require.Equal(t, river.EventKindJobCompleted, res.EventKind)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:resting' AND status = 'open' AND unfollowed_at IS NOT NULL"),
		"past the horizon the row is left as last known, marked unfollowed")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM trace_history WHERE trace_id = 'k:resting' AND event = 'order_unfollowed'
		AND detail->>'client_order_id' = $1 AND detail->>'reason' LIKE '%purged%still open%'`, restingArgs.ClientOrderID))
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->>'channel' = 'telegram'
		AND args->'message'->>'event' = 'order_unfollowed' AND args->'message'->>'trace_id' = 'k:resting'`))
	require.Zero(t, count(t, b.pool, `SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'trace_id' = 'k:old'
		AND args->'message'->>'event' = 'order_unfollowed'`))

	// A second look (a job queued again) adds nothing.
	_, err = fb.work(t, restingArgs)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:resting' AND event = 'order_unfollowed'"))
}

// A followed order's fill is notified (order_filled is a default event),
// committed with the fill and delivered by River.
func TestFilledOrderIsNotified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	cfg := fake.Config()
	cfg.Events = nil // the defaults
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	sender, err := notify.New(cfg)
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier, NotifySender: sender})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: b.venues,
		Jobs: client, Notifier: notifier})
	t.Cleanup(gw.Close)
	_, err = gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"ETHUSDT","action":"buy","quantity":"3","price":"2000","trace_id":"notify-fill"}`))
	require.NoError(t, err)
	_, err = b.paper.SetPrice(ctx, "ETHUSDT", false, decimal.RequireFromString("1999"))
	require.NoError(t, err)

	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(sctx))
	})
	reqs := fake.Await(t, notify.ChannelTelegram, 1)
	text := reqs[0].Text()
	require.Contains(t, text, "order filled")
	require.Contains(t, text, "k:notify-fill")
	require.Contains(t, text, "filled 3 of 3 at 2000")
}

// The sweeper records a dead attempt's resting limit order open and queues
// its follow job in the same commit; outside River (no client to queue
// it with) it records nothing rather than an order nobody follows.
func TestSweeperQueuesTheFollowOfAnOpenOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	limit := reconcileOrder
	limit.ClientOrderID, limit.OrderType, limit.Price = "hxsweptlimit0000000000000000000a", "limit", decimal.NewNullDecimal(decimal.NewFromInt(100))
	_, err := b.paper.Place(ctx, limit)
	require.NoError(t, err)
	seedIntent(t, b.pool, "k:swept-limit", limit, time.Now().Add(-time.Second), "")
	sw := newSweeper(t, b)

	n, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Zero(t, n, "outside River the open order is left for a sweep that can follow it")
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM orders"))

	w := rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, sw.SweepWorker)
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = w.Work(ctx, t, tx, jobs.SweepArgs{}, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM orders WHERE status = 'open' AND trace_id = 'k:swept-limit'"))
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'follow' AND args->>'client_order_id' = $1", limit.ClientOrderID),
		"followed from the sweeper's commit on")
}

// One follow job per order: queuing it again (another path recording the
// same order, a second replica) is a no-op while the first is not done.
func TestFollowJobIsUniquePerOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues})
	require.NoError(t, err)
	args := jobs.FollowArgs{ClientOrderID: "hxunique", TraceID: "k:u", Exchange: "paper", Mode: "live"}
	for range 3 {
		tx, err := b.pool.Begin(ctx)
		require.NoError(t, err)
		_, err = client.InsertTx(ctx, tx, args, nil)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
	args.ClientOrderID = "hxother"
	_, err = client.Insert(ctx, args, nil)
	require.NoError(t, err)
	require.EqualValues(t, 1, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'follow' AND args->>'client_order_id' = 'hxunique'"))
	require.EqualValues(t, 2, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'follow' AND queue = 'follow'"))
}
