package jobs_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// A leg pass whose Postgres session (and the trace's advisory lock with
// it) is lost between reading the legs and marking the first one sent does
// not send that leg once another pass has taken the lock and sent it:
// db.MarkLegSent arms the leg only while it holds the attempts the pass
// read under the lock. Without that, both passes send the take-profit
// under one clientAlgoId, and Binance keeps that ID unique only among open
// algo orders: once the first take-profit triggered, the second is
// accepted — a second take-profit, reduce-only, resting for the symbol's
// next position, that hoox never records.
func TestExitIsSentOnceWhenAPassLosesItsLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A resting limit entry with a take-profit and a stop-loss, filled at
	// the venue; recording the fill plans its exits (migration 00015) and
	// leaves them open, as a follow job's commit does before its Finish.
	b, f, _, venues, out := filledFuturesEntryWithExits(t, "lost-leg-lock")
	entry := out.Order.ClientOrderID
	lockKey, tp := firstLeg(t, b.pool, entry)

	// Pass A works through a pool whose second acquisition (the entry's
	// fill, read after LockLegs took the lock) waits until released.
	poolA, paused, release := pausedAtSecond(t, b.url)
	passA := jobs.NewLegRunner(poolA, b.pool, jobs.Config{}, venues, nil, nil)
	doneA := finishPaused(t, passA, lockKey, entry, paused)

	// A's session is lost (a failover, a pooler reset, an operator's
	// pg_terminate_backend): its advisory lock goes with it.
	pgtest.TerminateLockHolder(t, b.pool)

	// Pass B (the sweeper, another replica's follow job) takes the lock,
	// sends the take-profit; before it records it the price spikes through
	// the trigger and comes back, and pass A goes on.
	var once sync.Once
	passB := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, func(id string) {
		if id != tp {
			return
		}
		once.Do(func() {
			f.MovePrice("ETHUSDT", decimal.RequireFromString("3300"))
			f.SetPrice("ETHUSDT", decimal.RequireFromString("3000"))
			close(release)
			select {
			case <-doneA:
			case <-time.After(30 * time.Second):
				t.Error("pass A did not end")
			}
		})
	})
	_, err := passB.Finish(ctx, lockKey, entry)
	if err != nil {
		// The take-profit's spike closed the position: the stop-loss waits
		// for the position read to settle (a later pass refuses it).
		require.ErrorIs(t, err, jobs.ErrNotYet)
	}

	sent := 0
	for _, a := range f.AlgoOrders() {
		if a.ClientAlgoID == tp {
			sent++
		}
	}
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, tp),
		"hoox records one take-profit")
	require.Equal(t, 1, sent, "one take-profit at Binance for the one planned: pass A, whose lock was lost, sent it again")
}

// A pass whose arming of a leg fails with its outcome unknown (its
// connection broke) must not clear the send of the pass that took the lock
// it lost. Pass A reads the take-profit unarmed under the trace's lock and
// loses its session; pass B takes the lock, arms the take-profit and sends
// it; the price spikes through the trigger and back, and the symbol's next
// long opens. Pass A's own arming then fails on a broken connection, and A
// undoes "its" arming so that the next pass sends without a lookup: named
// by its count alone, that arming was B's. B loses its session before it
// records the take-profit, and the next pass sent a second one under the
// same clientAlgoId, which Binance takes once the first has triggered: a
// take-profit on the next position, never recorded. The next pass must
// look B's up and record it.
func TestFailedLegArmingLeavesAnotherPassesSendMarked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b, f, _, venues, out := filledFuturesEntryWithExits(t, "failed-leg-arming")
	entry := out.Order.ClientOrderID
	lockKey, tp := firstLeg(t, b.pool, entry)

	// Pass A: its second acquisition (the entry's fill, read after
	// LockLegs took the lock) waits until released, and its arming's
	// connection is broken.
	poolA, paused, release := pausedAtSecond(t, b.url)
	armPoolA := pgtest.HookedPool(t, b.url, func(_ context.Context, n int32) error {
		if n == 1 {
			return errors.New("write failed: write: broken pipe")
		}
		return nil
	})
	passA := jobs.NewLegRunner(poolA, armPoolA, jobs.Config{}, venues, nil, nil)
	doneA := finishPaused(t, passA, lockKey, entry, paused)
	pgtest.TerminateLockHolder(t, b.pool)

	// Pass B sends the take-profit; the price spikes through its trigger
	// and back; pass A goes on and fails to arm; B's replica dies.
	var errA error
	passB := jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, func(id string) {
		if id != tp {
			return
		}
		f.MovePrice("ETHUSDT", decimal.RequireFromString("3300"))
		f.SetPrice("ETHUSDT", decimal.RequireFromString("3000"))
		f.SetPosition("ETHUSDT", decimal.RequireFromString("1")) // the symbol's next long
		close(release)
		select {
		case errA = <-doneA:
		case <-time.After(30 * time.Second):
			t.Error("pass A did not end")
		}
		pgtest.TerminateLockHolder(t, b.pool) // B's session is lost too
	})
	_, err := passB.Finish(ctx, lockKey, entry)
	require.Error(t, err, "pass B could not record its take-profit")
	require.Error(t, errA, "pass A's arming failed")

	// The next pass (the sweeper's) finds the take-profit sent.
	_, err = jobs.NewLegRunner(b.pool, nil, jobs.Config{}, venues, nil, nil).Finish(ctx, lockKey, entry)
	if err != nil {
		require.ErrorIs(t, err, jobs.ErrNotYet, "only the stop-loss may wait")
	}
	sent := 0
	for _, a := range f.AlgoOrders() {
		if a.ClientAlgoID == tp {
			sent++
		}
	}
	require.Equal(t, 1, sent, "one take-profit at Binance for the one planned")
	require.EqualValues(t, 1, count(t, b.pool, `SELECT count(*) FROM orders WHERE client_order_id = $1`, tp),
		"hoox records the take-profit pass B sent")
}

// pausedAtSecond opens a pool on url whose second acquisition (a leg
// pass's first read after LockLegs took the lock) waits until release is
// closed; paused is closed when it starts waiting.
func pausedAtSecond(t *testing.T, url string) (pool *pgxpool.Pool, paused <-chan struct{}, release chan<- struct{}) {
	t.Helper()
	p, r := make(chan struct{}), make(chan struct{})
	pool = pgtest.HookedPool(t, url, func(_ context.Context, n int32) error {
		if n == 2 {
			close(p)
			<-r
		}
		return nil
	})
	return pool, p, r
}

// finishPaused starts pass's Finish and returns once it is paused (its
// pool's paused is closed); its error comes on the channel.
func finishPaused(t *testing.T, pass *jobs.LegRunner, lockKey, entry string, paused <-chan struct{}) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := pass.Finish(context.Background(), lockKey, entry)
		done <- err
	}()
	select {
	case <-paused:
	case <-time.After(30 * time.Second):
		t.Fatal("the pass never read the entry's fill")
	}
	return done
}

// firstLeg reads the lock key and client order ID of entry's first leg.
func firstLeg(t *testing.T, pool *pgxpool.Pool, entry string) (lockKey, clientOrderID string) {
	t.Helper()
	require.NoError(t, pool.QueryRow(context.Background(), `SELECT lock_key, client_order_id FROM order_legs
WHERE parent_client_order_id = $1 AND seq = 1`, entry).Scan(&lockKey, &clientOrderID))
	return lockKey, clientOrderID
}
