package jobs_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/binance"
	"github.com/hoox/hoox/exchange/binance/binancefake"
	"github.com/hoox/hoox/exchange/bybit"
	"github.com/hoox/hoox/exchange/bybit/bybitfake"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
)

// a Bybit order whose answer was lost and that the venue
// does not show past its accept window proves nothing — Bybit's create is
// asynchronous and may be booked late (bybitfake.LateInEngine; DECISIONS,
// "Bybit refuses no late request"). The reconcile may send it again under
// the same ID (IDKeeper), but when the kill switch forbids that, it must
// not settle the intent `not_placed`: that frees the key ("only proven
// absence frees a key"), so the operator releases the failed trace without
// force, the resent signal goes out under the next execution's ID, and the
// late original is booked beside it — two orders, one never recorded.
func TestBybitReconcileUnderKillSwitchDoesNotFreeTheKey(t *testing.T) {
	t.Parallel()
	bybitLateNotSentAgain(t, true)
}

// The same with the kill switch released but the signal past
// HOOX_MAX_SIGNAL_AGE (30 s) when the reconcile runs (its job retried
// after a lookup error, a busy queue): the "stale" branch settles the
// intent not_placed too. Far more common than the kill switch.
func TestBybitStaleReconcileDoesNotFreeTheKey(t *testing.T) {
	t.Parallel()
	bybitLateNotSentAgain(t, false)
}

func bybitLateNotSentAgain(t *testing.T, halt bool) {
	ctx := context.Background()
	b := setup(t)
	clock := testutil.NewClock(time.Now())
	f := bybitfake.New(t, bybitfake.Options{Now: clock.Now, Sleep: clock.Advance})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	v, err := bybit.New(bybit.Config{Market: bybit.MarketLinear, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: tr}, Now: clock.Now})
	require.NoError(t, err)
	require.False(t, exchange.RefusesLate(v), "Bybit may book a create late")
	venues := exchange.NewRegistry(map[string]exchange.Venue{"bybit": v})
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: venues})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: pgtest.OpenPool(t, b.url), Venues: venues, Jobs: client})
	t.Cleanup(gw.Close)

	const body = `{"exchange":"bybit","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"bybit-late-halt"}`
	// The create reaches Bybit's backend only an hour later; its answer is
	// a 10016 "Server error": unknown, reconciled.
	f.InjectPlacements(1, bybitfake.LateInEngine(time.Hour))
	out, err := gw.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.EqualValues(t, db.TraceReconciling, out.Status)
	args := queuedReconcile(t, b, "k:bybit-late-halt")

	// The operator halts trading; the reconcile runs once the request's
	// accept window has closed (Postgres's clock: the send is moved back).
	if halt {
		_, err = db.SetKillSwitch(ctx, b.pool, true, "venue incident", "ops")
		require.NoError(t, err)
	} else {
		_, err = b.pool.Exec(ctx, `UPDATE trace_ids SET received_at = received_at - interval '1 minute'`)
		require.NoError(t, err)
	}
	_, err = b.pool.Exec(ctx, `UPDATE dispatch_intents SET sent_at = sent_at - interval '1 minute'`)
	require.NoError(t, err)
	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, venues, nil, jobs.NewMetrics(nil))
	_, err = newWorkerFor(t, w).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:bybit-late-halt"))
	var outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT outcome FROM dispatch_intents WHERE client_order_id = $1`,
		args.Order.ClientOrderID).Scan(&outcome))

	// The failed trace reads "not sent"; the operator releases it to let
	// the strategy's resend through.
	_, relErr := db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: "k:bybit-late-halt", By: "ops", LockWait: time.Second})
	if errors.Is(relErr, db.ErrOrderUnknown) {
		// Fixed: the key stays blocked while the order may still appear.
		require.NotEqual(t, string(db.IntentNotPlaced), outcome)
		return
	}
	require.NoError(t, relErr)
	_, err = db.SetKillSwitch(ctx, b.pool, false, "", "ops")
	require.NoError(t, err)

	// Bybit's backend books the original; the resend places the next
	// execution under a new ID.
	clock.Advance(time.Hour)
	require.Zero(t, f.PendingLate())
	again, err := gw.Execute(ctx, input(t, body))
	require.NoError(t, err)
	require.NotEqual(t, args.Order.ClientOrderID, again.Order.ClientOrderID)

	recorded := count(t, b.pool, `SELECT count(*) FROM orders`)
	t.Logf("intent outcome after the halted reconcile: %s; orders at Bybit: %d; recorded by hoox: %d", outcome, len(f.Orders()), recorded)
	require.Len(t, f.Orders(), 1, "one signal, one order at Bybit: the halted reconcile settled the intent %q, which freed the key", outcome)
}

// newWorkerFor wraps a reconcile worker for rivertest.
func newWorkerFor(t *testing.T, w *jobs.ReconcileWorker) *rivertest.Worker[jobs.ReconcileArgs, pgx.Tx] {
	t.Helper()
	return rivertest.NewWorker(t, riverpgxv5.New(nil), &river.Config{}, w)
}

// queuedReconcile is the reconcile job the gateway queued for traceID.
func queuedReconcile(t *testing.T, b *testBundle, traceID string) jobs.ReconcileArgs {
	t.Helper()
	var raw []byte
	require.NoError(t, b.pool.QueryRow(context.Background(),
		`SELECT args FROM river_job WHERE kind = 'reconcile' AND args->>'trace_id' = $1`, traceID).Scan(&raw))
	var args jobs.ReconcileArgs
	require.NoError(t, json.Unmarshal(raw, &args))
	return args
}

// "The kill switch halts every placement, including a
// reconcile's" (DESIGN, recovery protocol; README "7."). A limit entry
// with a take-profit and a stop-loss fills at Binance USDⓈ-M, which plans
// its exits; the operator then halts trading. The legs' pass (the follow
// job's Finish, or the sweeper's) still places both exits: LegRunner never
// reads the kill switch.
func TestLegsAreNotPlacedUnderTheKillSwitch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, venues, out := filledFuturesEntryWithExits(t, "halted-legs")
	entry := out.Order.ClientOrderID
	var lockKey string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1 LIMIT 1`, entry).Scan(&lockKey))
	before := len(f.AlgoOrders())

	_, err := db.SetKillSwitch(ctx, b.pool, true, "venue incident", "ops")
	require.NoError(t, err)
	_, _ = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)

	placed := len(f.AlgoOrders()) - before
	require.Zerof(t, placed, "%d exit order(s) placed at Binance after the kill switch was engaged", placed)
}

// a reconcile job run again after its trace was settled,
// released and claimed anew settles the new execution's trace with the
// old execution's order.
//
// Replica A dies (-9) while running the reconcile of k:rescued (execution
// 0): its job stays `running`. After reconcileDeadAfter the sweeper takes
// the trace for orphaned, finds nothing at the venue and ends it failed,
// intent not_placed — the key is free. The operator releases it, the
// strategy resends, and execution 1's answer is lost too: k:rescued is
// reconciling again, its order (under a new client order ID) at the venue,
// its own reconcile job queued. Then River's rescuer (RescueStuckJobsAfter,
// ten seconds after the sweeper at the defaults) runs execution 0's job
// again. db.Reconcile locks the trace by its ID only: it sees
// "reconciling", looks up execution 0's ID (not found, past its window),
// judges the signal stale by execution 1's age, and commits `failed` onto
// execution 1's trace, overwriting its client_order_id. Execution 1's own
// reconcile then finds the trace settled and records nothing: its order at
// the venue is never recorded, and nothing sweeps an intent left
// `reconciling` under a failed trace.
func TestRescuedReconcileDoesNotSettleTheNextExecution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	const traceID = "k:rescued"
	exec0 := reconcileOrder
	exec0.ClientOrderID = "hxrescued0000000000000000000000"
	args0 := seedReconciling(t, b.pool, traceID, exec0, time.Now().Add(-5*time.Minute))

	// The sweeper settles the orphaned reconcile (no live job row).
	sw := newSweeper(t, b)
	_, err := sw.Sweep(ctx)
	require.NoError(t, err)
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, traceID))
	_, err = db.ReleaseTrace(ctx, b.pool, db.ReleaseParams{TraceID: traceID, By: "ops", LockWait: time.Second})
	require.NoError(t, err)

	// Execution 1: placed at the venue, answer lost, reconciling.
	exec1 := reconcileOrder
	exec1.ClientOrderID = "hxrescued0000000000000000000001"
	_, err = b.paper.Place(ctx, exec1)
	require.NoError(t, err)
	args1 := seedReconciling(t, b.pool, traceID, exec1, time.Now().Add(-time.Minute))

	// River rescues execution 0's job (attempt 2), then execution 1's runs.
	w := newTestWorker(t, b)
	_, err = w.Work(ctx, t, beginTx(t, b.pool), args0, nil)
	t.Logf("execution 0's rescued job: err=%v; trace now %s", err, traceStatus(t, b.pool, traceID))
	_, err = w.Work(ctx, t, beginTx(t, b.pool), args1, nil)
	require.NoError(t, err)
	// Nor does a later sweep find it.
	_, err = sw.Sweep(ctx)
	require.NoError(t, err)
	es := events(t, b.pool, traceID)
	var cid string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT coalesce(client_order_id, '') FROM trace_ids WHERE trace_id = $1`, traceID).Scan(&cid))
	t.Logf("last event %s %v; trace's client_order_id %s (execution 1's is %s)", es[len(es)-1].Event, es[len(es)-1].Detail["reason"], cid, exec1.ClientOrderID)

	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, exec1.ClientOrderID),
		"execution 1's order, held by the venue, is recorded")
	require.Equal(t, db.TraceDispatched, traceStatus(t, b.pool, traceID))
}

// haltsDuringLookup is the paper venue whose lookup takes long enough for
// the operator to engage the kill switch (and get the 200) meanwhile.
type haltsDuringLookup struct {
	*paper.Venue
	pool *pgxpool.Pool
}

func (v haltsDuringLookup) Lookup(ctx context.Context, o exchange.Order) (exchange.Report, error) {
	if _, err := db.SetKillSwitch(ctx, v.pool, true, "venue incident", "ops"); err != nil {
		return exchange.Report{}, err
	}
	return v.Venue.Lookup(ctx, o)
}

// the reconcile reads the kill switch when it locks the
// trace, before its lookup (up to HOOX_VENUE_TIMEOUT, 10 s), and re-sends
// on that stale reading: an operator whose PUT /admin/kill-switch
// answered "engaged" during the lookup still sees an order placed
// afterwards. The re-arm (TouchIntent) commits just before the send and
// could refuse under the switch in the same statement.
func TestReconcileDoesNotResendAfterTheKillSwitchIsEngaged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	b.venues = exchange.NewRegistry(map[string]exchange.Venue{"paper": haltsDuringLookup{b.paper, b.pool}})
	args := seedReconciling(t, b.pool, "k:halt-mid-lookup", reconcileOrder, time.Now())

	_, err := newTestWorker(t, b).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	k, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.True(t, k.Engaged)
	fills, err := b.paper.Orders(ctx)
	require.NoError(t, err)
	require.Emptyf(t, fills, "placed after the kill switch was engaged (trace %s)", traceStatus(t, b.pool, "k:halt-mid-lookup"))
}

// engageHook engages the kill switch once, the first time when(r) holds
// for a request the venue adapter sends: a read inside Place, after the
// statement that armed the order read the switch.
type engageHook struct {
	t    *testing.T
	pool *pgxpool.Pool
	next http.RoundTripper
	when func(*http.Request) bool
	once sync.Once
	done atomic.Bool
}

func (h *engageHook) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.when(r) {
		h.once.Do(func() {
			_, err := db.SetKillSwitch(context.Background(), h.pool, true, "venue incident", "ops")
			require.NoError(h.t, err)
			h.done.Store(true)
		})
	}
	return h.next.RoundTrip(r)
}

// armed reports whether q counts a row: the test's way of seeing, from
// inside a request, that the intent or leg was armed already.
func armed(t *testing.T, pool *pgxpool.Pool, q string, args ...any) bool {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), q, args...).Scan(&n))
	return n > 0
}

// The reconcile's re-send reads the kill switch in its re-arm
// (TouchIntent), but Binance USDⓈ-M's Place then reads the position (GET
// /fapi/v2/positionRisk, every time) before it sends: an engage answered
// during that read must stop the order, and the trace ends halted as on
// TouchIntent's own refusal.
func TestReconcileResendIsNotPlacedUnderAKillSwitchEngagedDuringPlacesReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	f := binancefake.New(t, binancefake.Options{})
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	o := exchange.Order{ClientOrderID: "hxksresend0000000000000000000a", Symbol: "ETHUSDT", Action: "buy", Side: "buy",
		OrderType: "market", Quantity: decimal.RequireFromString("1")}
	hook := &engageHook{t: t, pool: b.pool, next: tr, when: func(r *http.Request) bool {
		// Re-armed: TouchIntent moved sent_at to now (it was 15 s ago).
		return r.Method == http.MethodGet && strings.Contains(r.URL.Path, "positionRisk") &&
			armed(t, b.pool, `SELECT count(*) FROM dispatch_intents WHERE client_order_id = $1 AND sent_at > now() - interval '5 seconds'`, o.ClientOrderID)
	}}
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: hook}, LookupLag: time.Second})
	require.NoError(t, err)
	venues := exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v})
	// Sent 15 s ago, past the accept window (5 s + 1 s + 2 s), and never
	// booked: "not found" is proof, and the reconcile sends it again.
	args := seedReconciling(t, b.pool, "k:ks-resend", o, time.Now().Add(-15*time.Second))
	args.Exchange = "binance-futures"

	w := jobs.NewReconcileWorker(b.pool, nil, jobs.Config{}, venues, nil, jobs.NewMetrics(nil))
	_, err = newWorkerFor(t, w).Work(ctx, t, beginTx(t, b.pool), args, nil)
	require.NoError(t, err)
	require.True(t, hook.done.Load(), "the switch was engaged during Place's position read, after the re-arm")
	require.Empty(t, f.Orders(), "the re-send was placed after the kill switch was engaged and answered")
	require.Equal(t, db.TraceFailed, traceStatus(t, b.pool, "k:ks-resend"))
	var outcome string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT outcome FROM dispatch_intents WHERE client_order_id = $1`, o.ClientOrderID).Scan(&outcome))
	require.Equal(t, string(db.IntentNotPlaced), outcome, "USDⓈ-M refuses a late request: absent past the window, and this send never left")
}

// The same for exit legs: MarkLegSent reads the switch when it arms a
// leg, and Binance USDⓈ-M's placeAlgo may then read the venue (the
// server time, here re-read on every request) before it sends. An engage
// answered during that read leaves the exits unsent and open; a pass after
// the release places them.
func TestExitLegsAreNotPlacedUnderAKillSwitchEngagedDuringPlacesReads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, _, out := filledFuturesEntryWithExits(t, "ks-legs")
	entry := out.Order.ClientOrderID
	var lockKey string
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT lock_key FROM order_legs WHERE parent_client_order_id = $1 LIMIT 1`, entry).Scan(&lockKey))
	before := len(f.AlgoOrders())

	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hook := &engageHook{t: t, pool: b.pool, next: tr, when: func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/time") &&
			armed(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = $1 AND sent_at IS NOT NULL AND outcome IS NULL`, entry)
	}}
	v, err := binance.New(binance.Config{Market: binance.MarketFutures, APIKey: f.APIKey(), APISecret: f.APISecret(), BaseURL: f.URL,
		HTTPClient: &http.Client{Transport: hook}, TimeSync: time.Nanosecond})
	require.NoError(t, err)
	runner := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, exchange.NewRegistry(map[string]exchange.Venue{"binance-futures": v}), nil, nil)
	_, _ = runner.Finish(ctx, lockKey, entry)
	require.True(t, hook.done.Load(), "the switch was engaged during an exit's Place, after its leg was armed")
	placed := len(f.AlgoOrders()) - before
	require.Zerof(t, placed, "%d exit order(s) placed at Binance after the kill switch was engaged and answered", placed)
	require.EqualValues(t, 2, count(t, b.pool, `SELECT count(*) FROM order_legs WHERE parent_client_order_id = $1 AND outcome IS NULL AND sent_at IS NULL`, entry),
		"both exits wait, unsent, for the release")

	_, err = db.SetKillSwitch(ctx, b.pool, false, "", "ops")
	require.NoError(t, err)
	_, err = runner.Finish(ctx, lockKey, entry)
	require.NoError(t, err)
	require.Equal(t, 2, len(f.AlgoOrders())-before, "placed after the release")
}
