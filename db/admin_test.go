package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
)

// seedTrace and seedOrder are rows written straight into the tables,
// bypassing the claim, so listings can be tested over any history.
type (
	seedTrace = testfactory.TraceOpts
	seedOrder = testfactory.OrderOpts
)

// insertTrace gives every trace its own fingerprint ("fp-<id>") and a
// stored signal, which the audit queries read back.
func insertTrace(t *testing.T, pool *pgxpool.Pool, s seedTrace) {
	t.Helper()
	s.Fingerprint, s.Signal = "fp-"+s.ID, `{"symbol":"x"}`
	testfactory.Trace(t, pool, s)
}

func insertOrder(t *testing.T, pool *pgxpool.Pool, o seedOrder) uuid.UUID {
	t.Helper()
	return testfactory.Order(t, pool, o).ID
}

func insertEvent(t *testing.T, pool *pgxpool.Pool, traceID, event string, at time.Time, detail map[string]any) {
	t.Helper()
	testfactory.Event(t, pool, traceID, event, at, detail)
}

func TestListTracesPagesEveryRowOnceNewestFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	// Pairs share a received_at, so the trace_id tie-break is exercised at
	// page boundaries.
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var want []string
	for i := range 25 {
		id := fmt.Sprintf("k:page-%02d", i)
		insertTrace(t, pool, seedTrace{ID: id, ReceivedAt: base.Add(time.Duration(i/2) * time.Second)})
		want = append([]string{id}, want...) // newest (and, on a tie, greatest ID) first
	}

	var got []string
	var after *db.TraceCursor
	for pages := 0; ; pages++ {
		require.Less(t, pages, 10, "pagination does not end")
		rows, err := db.ListTraces(ctx, pool, db.ListFilter{Limit: 7}, after)
		require.NoError(t, err)
		for _, r := range rows {
			got = append(got, r.TraceID)
		}
		if len(rows) < 7 {
			break
		}
		last := rows[len(rows)-1]
		after = &db.TraceCursor{ReceivedAt: last.ReceivedAt, TraceID: last.TraceID}
	}
	require.Equal(t, want, got)
}

func TestListTracesFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now()
	insertTrace(t, pool, seedTrace{ID: "k:a", Status: db.TraceDispatched, Symbol: "BTCUSDT", ReceivedAt: now.Add(-3 * time.Hour)})
	insertTrace(t, pool, seedTrace{ID: "k:b", Status: db.TraceRejected, Symbol: "ETHUSDT", ReceivedAt: now.Add(-2 * time.Hour)})
	insertTrace(t, pool, seedTrace{ID: "test:k:c", Status: db.TraceDispatched, Mode: "test", Exchange: "other", ReceivedAt: now.Add(-time.Hour)})

	ids := func(f db.ListFilter) []string {
		f.Limit = 100
		rows, err := db.ListTraces(ctx, pool, f, nil)
		require.NoError(t, err)
		var out []string
		for _, r := range rows {
			out = append(out, r.TraceID)
		}
		return out
	}
	require.Equal(t, []string{"test:k:c", "k:b", "k:a"}, ids(db.ListFilter{}))
	require.Equal(t, []string{"k:b"}, ids(db.ListFilter{Status: string(db.TraceRejected)}))
	require.Equal(t, []string{"k:b"}, ids(db.ListFilter{Symbol: "ETHUSDT"}))
	require.Equal(t, []string{"test:k:c"}, ids(db.ListFilter{Mode: "test"}))
	require.Equal(t, []string{"test:k:c"}, ids(db.ListFilter{Exchange: "other"}))
	require.Equal(t, []string{"test:k:c", "k:b"}, ids(db.ListFilter{Since: now.Add(-150 * time.Minute)}))
	require.Equal(t, []string{"k:a"}, ids(db.ListFilter{Until: now.Add(-150 * time.Minute)}))
	require.Empty(t, ids(db.ListFilter{Status: string(db.TraceRejected), Mode: "test"}))
}

func TestListOrdersPagesAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	base := time.Now().Add(-time.Hour)
	same := base.Add(time.Minute)
	var want []uuid.UUID
	for i := range 9 {
		at := base.Add(time.Duration(i) * time.Second)
		if i >= 6 {
			at = same // a tie broken by id
		}
		want = append(want, insertOrder(t, pool, seedOrder{TraceID: fmt.Sprintf("k:o%d", i), CreatedAt: at}))
	}
	rejected := insertOrder(t, pool, seedOrder{TraceID: "k:rej", Status: "rejected", Symbol: "DOGEUSDT", CreatedAt: base.Add(-time.Minute)})

	var got []uuid.UUID
	var after *db.OrderCursor
	for {
		rows, err := db.ListOrders(ctx, pool, db.ListFilter{Status: "filled", Limit: 4}, after)
		require.NoError(t, err)
		for _, r := range rows {
			got = append(got, r.ID)
		}
		if len(rows) < 4 {
			break
		}
		last := rows[len(rows)-1]
		after = &db.OrderCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	require.ElementsMatch(t, want, got)
	require.Len(t, got, len(want))
	// Newest first: the three tied orders lead, greatest id first.
	require.Equal(t, []uuid.UUID{want[8], want[7], want[6], want[5]}, got[:4])

	rows, err := db.ListOrders(ctx, pool, db.ListFilter{Symbol: "DOGEUSDT", Limit: 10}, nil)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, rejected, rows[0].ID)
	require.Equal(t, "0.5", rows[0].Quantity.String())
}

func TestReleaseTraceFreesTheKeyAndAudits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	insertTrace(t, pool, seedTrace{ID: "k:rel", Status: db.TraceDispatched})
	orderID := insertOrder(t, pool, seedOrder{TraceID: "k:rel"})
	insertEvent(t, pool, "k:rel", "received", time.Now().Add(-time.Second), nil)

	status, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:rel", By: "admin", Reason: "resend after venue outage"})
	require.NoError(t, err)
	require.Equal(t, db.TraceDispatched, status)

	d, err := db.GetTrace(ctx, pool, "k:rel")
	require.NoError(t, err)
	require.Nil(t, d.Trace, "the trace row is gone")
	require.Len(t, d.Orders, 1, "orders stay")
	require.Equal(t, orderID, d.Orders[0].ID)
	require.Len(t, d.Events, 2)
	require.Equal(t, "received", d.Events[0].Event)
	require.Equal(t, "released", d.Events[1].Event)
	var detail map[string]any
	require.NoError(t, json.Unmarshal(d.Events[1].Detail, &detail))
	require.Equal(t, "admin", detail["by"])
	require.Equal(t, "resend after venue outage", detail["reason"])

	_, err = db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:rel", By: "admin"})
	require.ErrorIs(t, err, db.ErrNotFound)
	_, err = db.GetTrace(ctx, pool, "k:never")
	require.ErrorIs(t, err, db.ErrNotFound)
}

func TestReleaseWaitsForTheClaimInFlight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	const id = "w:abc123:1700000000000"
	lockKey := db.LockKeyOf(id)
	require.Equal(t, "w:abc123", lockKey)

	// An attempt still dispatching holds the claim's lock: a release must
	// not delete the trace under it.
	tx, res, err := db.Claim(ctx, pool, db.ClaimParams{TraceID: id, LockKey: lockKey, Fingerprint: "abc123", Mode: "live",
		KeySource: "window", Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Signal: []byte(`{}`),
		TTL: time.Hour, Window: time.Minute, LockWait: time.Second})
	require.NoError(t, err)
	require.True(t, res.Claimed)
	_, err = db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: id, By: "admin", LockWait: 50 * time.Millisecond})
	require.ErrorIs(t, err, db.ErrLockTimeout)
	tx.Rollback(ctx)
}

// A release given no lock wait still gives up on a held trace: Postgres
// would read lock_timeout = 0 as "wait forever".
func TestReleaseWithoutALockWaitNeverWaitsForever(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	tx, res, err := db.Claim(ctx, pool, db.ClaimParams{TraceID: "k:held", LockKey: "k:held", Fingerprint: "f", Mode: "live",
		KeySource: "client", Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Signal: []byte(`{}`),
		TTL: time.Hour, LockWait: time.Second})
	require.NoError(t, err)
	require.True(t, res.Claimed)
	defer tx.Rollback(ctx)
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = db.ReleaseTrace(wait, pool, db.ReleaseParams{TraceID: "k:held", By: "admin"})
	require.ErrorIs(t, err, db.ErrLockTimeout, "not the test's deadline")
}

func TestOnlyAReconcilingTraceIsNotReleasable(t *testing.T) {
	t.Parallel()
	for _, s := range db.TraceStatuses() {
		require.Equal(t, s != db.TraceReconciling, s.Releasable(), s)
	}
}

func TestLockKeyOf(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]string{
		"k:abc":                  "k:abc",
		"k:w:1":                  "k:w:1",
		"test:k:abc":             "test:k:abc",
		"d:ffee":                 "d:ffee",
		"w:ffee:1700000000000":   "w:ffee",
		"test:w:ff:170000000000": "test:w:ff",
		"w:":                     "w:",
		"test:w:":                "test:w:",
		// Named accounts (signal.DeriveAccountTrace).
		"@sub1:k:abc":                  "@sub1:k:abc",
		"@sub1:k:w:1":                  "@sub1:k:w:1",
		"@sub1:d:ffee":                 "@sub1:d:ffee",
		"@sub1:w:ffee:1700000000000":   "@sub1:w:ffee",
		"test:@sub1:w:ff:170000000000": "test:@sub1:w:ff",
		"@sub1:w:":                     "@sub1:w:",
	} {
		require.Equal(t, want, db.LockKeyOf(id), id)
	}
}

func TestKillSwitchIsSeenByTheClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	k, err := db.GetKillSwitch(ctx, pool)
	require.NoError(t, err)
	require.False(t, k.Engaged)
	require.True(t, k.At.IsZero())

	claimSeesKillSwitch := func() bool {
		tx, res, err := db.Claim(ctx, pool, db.ClaimParams{TraceID: "k:ks", LockKey: "k:ks", Fingerprint: "f", Mode: "live",
			KeySource: "client", Exchange: "paper", Symbol: "BTCUSDT", Action: "buy", Signal: []byte(`{}`),
			TTL: time.Hour, LockWait: time.Second})
		require.NoError(t, err)
		tx.Rollback(ctx)
		return res.KillSwitch
	}
	require.False(t, claimSeesKillSwitch())

	k, err = db.SetKillSwitch(ctx, pool, true, "exchange incident", "admin")
	require.NoError(t, err)
	require.True(t, k.Engaged)
	require.True(t, claimSeesKillSwitch())
	got, err := db.GetKillSwitch(ctx, pool)
	require.NoError(t, err)
	require.True(t, got.Engaged)
	require.Equal(t, "exchange incident", got.Reason)
	require.Equal(t, "admin", got.By)
	require.False(t, got.At.IsZero())

	_, err = db.SetKillSwitch(ctx, pool, false, "", "admin")
	require.NoError(t, err)
	require.False(t, claimSeesKillSwitch())

	d, err := db.GetTrace(ctx, pool, db.KillSwitchTraceID)
	require.NoError(t, err)
	require.Len(t, d.Events, 2)
	require.Equal(t, "kill_switch_engaged", d.Events[0].Event)
	require.Equal(t, "kill_switch_released", d.Events[1].Event)
}

func TestStatsCountOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now()
	insertTrace(t, pool, seedTrace{ID: "k:old", ReceivedAt: now.Add(-5 * time.Hour)})
	insertTrace(t, pool, seedTrace{ID: "k:new", ReceivedAt: now.Add(-time.Minute)})
	insertEvent(t, pool, "k:old", "received", now.Add(-5*time.Hour), nil)
	insertEvent(t, pool, "k:old", "dispatched", now.Add(-5*time.Hour), nil)
	insertEvent(t, pool, "k:new", "received", now.Add(-time.Minute), nil)
	insertEvent(t, pool, "k:new", "dispatched", now.Add(-time.Minute), nil)
	insertEvent(t, pool, "k:new", "duplicate", now.Add(-30*time.Second), nil)
	insertEvent(t, pool, "k:ancient", "received", now.Add(-48*time.Hour), nil)
	insertEvent(t, pool, db.KillSwitchTraceID, "kill_switch_engaged", now, nil)

	s, err := db.GetStats(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"received": 1, "dispatched": 1, "duplicate": 1}, s.LastHour.Events)
	require.Equal(t, map[string]int64{"received": 2, "dispatched": 2, "duplicate": 1}, s.LastDay.Events)
	require.InDelta(t, 0.5, s.LastHour.DuplicateRatio, 1e-9)
	require.InDelta(t, 1.0/3, s.LastDay.DuplicateRatio, 1e-9)
	require.EqualValues(t, 2, s.LiveTraces)
	require.NotNil(t, s.OldestTrace)
	require.WithinDuration(t, now.Add(-5*time.Hour), *s.OldestTrace, time.Second)

	lp, err := db.LastPurge(ctx, pool)
	require.NoError(t, err)
	require.Nil(t, lp, "no purge has run")
	insertTrace(t, pool, seedTrace{ID: "k:expired", ReceivedAt: now.Add(-26 * time.Hour), ExpiresAt: now.Add(-2 * time.Hour)})
	res, err := db.Purge(ctx, pool, db.PurgeParams{})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Traces)
	lp, err = db.LastPurge(ctx, pool)
	require.NoError(t, err)
	require.NotNil(t, lp)
	require.EqualValues(t, 1, lp.Traces)
	require.False(t, lp.At.IsZero())
}

// Releasing a reconciling trace would let a resend place a second order
// while the first may exist at the venue: it is refused, and the trace stays.
func TestReleaseRefusesAReconcilingTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	insertTrace(t, pool, seedTrace{ID: "k:unsure", Status: db.TraceReconciling})

	_, err := db.ReleaseTrace(ctx, pool, db.ReleaseParams{TraceID: "k:unsure", By: "admin"})
	require.ErrorIs(t, err, db.ErrReconciling)
	d, err := db.GetTrace(ctx, pool, "k:unsure")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the trace is kept")
	require.Equal(t, db.TraceReconciling, d.Trace.Status)
	for _, e := range d.Events {
		require.NotEqual(t, "released", e.Event)
	}
}

// The fanout filter finds one signal's traces and orders on every
// account: its default account's trace and "@<account>:" before it.
func TestListFanOutFindsEveryAccountsTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	for _, id := range []string{"k:x", "@sub1:k:x", "@by-2:k:x", "k:x2", "@sub1:k:x2", "test:@sub1:k:x", "k:@sub1:k:x"} {
		insertTrace(t, pool, seedTrace{ID: id})
		insertOrder(t, pool, seedOrder{TraceID: id})
	}
	traces, err := db.ListTraces(ctx, pool, db.ListFilter{FanOut: "k:x", Limit: 100}, nil)
	require.NoError(t, err)
	var ids []string
	for _, tr := range traces {
		ids = append(ids, tr.TraceID)
	}
	require.ElementsMatch(t, []string{"k:x", "@sub1:k:x", "@by-2:k:x"}, ids)
	orders, err := db.ListOrders(ctx, pool, db.ListFilter{FanOut: "test:k:x", Limit: 100}, nil)
	require.NoError(t, err)
	require.Len(t, orders, 1)
	require.Equal(t, "test:@sub1:k:x", orders[0].TraceID)
}
