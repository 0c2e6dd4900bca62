package bench

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/jobs"
)

// The purge goal seeds only after hoox's start-up purge is over: a purge
// that began during the seed would delete the seeded rows under the
// baseline (issue 21: a baseline that measured a purge, and a purge whose
// time missed its start).
func TestAwaitStartupPurgeWaitsForHooxsOwnPurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)

	// Not yet run (the leader has not started it): wait, then say so.
	err := AwaitStartupPurge(ctx, pool, 200*time.Millisecond)
	require.ErrorContains(t, err, "start-up purge has not finished")

	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	res, err := client.Insert(ctx, jobs.PurgeArgs{Scheduler: "startup"}, nil)
	require.NoError(t, err)

	// Queued, as hoox leaves it when the seed would begin.
	done := make(chan error, 1)
	go func() { done <- AwaitStartupPurge(ctx, pool, time.Minute) }()
	select {
	case err := <-done:
		t.Fatalf("returned while the purge was still queued: %v", err)
	case <-time.After(300 * time.Millisecond):
	}

	_, err = pool.Exec(ctx, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now() WHERE id = $1`, res.Job.ID)
	require.NoError(t, err)
	require.NoError(t, <-done, "the purge completed: the seed may start")
}

// The purge goal's seed is what the goal claims (expired traces with
// three events each, one in a hundred with its order unknown, a tenth as
// many live traces, and a day of earlier purges), and the purge removes
// exactly the expired traces whose order is known from it: in expiry
// order until it finds them scattered, then by sweeping the pages, past
// the live ones.
func TestPurgeOfTheSeedRemovesTheExpiredTracesOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	_, err := SeedExpired(ctx, pool, 2000)
	require.NoError(t, err)

	count := func(sql string) int {
		t.Helper()
		var n int
		require.NoError(t, pool.QueryRow(ctx, sql).Scan(&n))
		return n
	}
	require.Equal(t, 2000, count(`SELECT count(*) FROM trace_ids WHERE symbol = 'EXPIRED' AND expires_at < now()`))
	require.Equal(t, 200, count(`SELECT count(*) FROM trace_ids WHERE symbol = 'LIVE' AND expires_at > now()`))
	require.Equal(t, 6000, count(`SELECT count(*) FROM trace_events e JOIN trace_ids t USING (trace_id) WHERE t.symbol = 'EXPIRED'`))
	require.Equal(t, 2000, count(`SELECT count(*) FROM trace_purges`))

	res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: 50})
	require.NoError(t, err)
	require.EqualValues(t, 1980, res.Traces, "the expired traces whose order is known")
	held, purged, err := UnknownKept(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, 20, held, "expired traces whose order is unknown are kept")
	require.Zero(t, purged)
	require.Equal(t, 200, count(`SELECT count(*) FROM trace_ids WHERE symbol = 'LIVE'`), "no live trace is purged")
	require.Equal(t, 2000+1980, count(`SELECT count(*) FROM trace_purges`))
}

// A load run of the purge goal counts as "during" if it began by the time
// the purge ended (River's finalized_at), and as "after" if it began
// later: the bench learns of the end by polling, and one window begun 0.4 s
// after the purge had held a run's p99 (an autovacuum stall 9 s later;
// issue 21, twentieth round). A run begun as the purge ended ran beside it.
func TestPurgeRunsSplitAtTheEndOfThePurge(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	runs := []runP99{
		{began: t0, p99: 9 * time.Millisecond},
		{began: t0.Add(10 * time.Second), p99: 12 * time.Millisecond},
		{began: t0.Add(20 * time.Second), p99: 80 * time.Millisecond},
	}
	during, after, nDuring, nAfter := splitAtPurgeEnd(runs, t0.Add(19600*time.Millisecond))
	require.Equal(t, 12*time.Millisecond, during, "the worst run beside the purge")
	require.Equal(t, 80*time.Millisecond, after, "the run begun after the purge is one of the runs after it")
	require.Equal(t, []int{2, 1}, []int{nDuring, nAfter})

	during, _, nDuring, _ = splitAtPurgeEnd(runs, t0.Add(20*time.Second))
	require.Equal(t, 80*time.Millisecond, during, "a run begun as the purge ended ran beside it")
	require.Equal(t, 3, nDuring)

	_, _, nDuring, nAfter = splitAtPurgeEnd(runs, t0.Add(-time.Second))
	require.Equal(t, []int{0, 3}, []int{nDuring, nAfter}, "a purge over before any run: nothing measured beside it")
}

// The p99 during the purge pools every signal sent while it ran into one
// distribution, as the baseline pools its runs: a 10-s run that met a
// stalled second has the worst p99 of the runs, but over all the purge's
// signals that second is as much of the tail as it is of the signals.
// Signals sent after the purge ended count for nothing.
func TestPurgeP99PoolsTheSignalsSentWhileItRan(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	// run fills 10 s at 100/s with lat, except stalled signals sent in
	// [from, from+stall) that answer when the stall ends.
	run := func(began time.Time, lat time.Duration, from time.Time, stall time.Duration) *Report {
		rep := &Report{byOutcome: map[string][]time.Duration{}}
		for i := range 1000 {
			at := began.Add(time.Duration(i) * 10 * time.Millisecond)
			l := lat
			if !at.Before(from) && at.Before(from.Add(stall)) {
				l = from.Add(stall).Sub(at)
			}
			rep.add("200", l, at.Add(l))
		}
		rep.finish(began)
		return rep
	}
	quiet := run(t0, 5*time.Millisecond, t0, 0)
	// A 300-ms stall: 30 signals answer 10-300 ms late.
	stalled := run(t0.Add(10*time.Second), 5*time.Millisecond, t0.Add(13*time.Second), 300*time.Millisecond)
	calm := run(t0.Add(20*time.Second), 6*time.Millisecond, t0, 0)
	require.Greater(t, stalled.All.P99, 150*time.Millisecond, "the stalled run's own p99 is the stall")

	all := Pooled([]*Report{quiet, stalled, calm}, time.Time{})
	require.Equal(t, 3000, all.Count)
	require.Equal(t, 6*time.Millisecond, all.P99, "30 stalled of 3,000 signals are the slowest 1 %, and no more")

	// The purge ended 5 s into the last run: its later signals are not
	// counted, and the stall is now more of what was sent.
	cut := Pooled([]*Report{quiet, stalled, calm}, t0.Add(25*time.Second))
	require.Equal(t, 2501, cut.Count, "signals sent up to and at the end")
	require.Greater(t, cut.P99, 6*time.Millisecond)
	require.Equal(t, stalled.All.Max, cut.Max)
}
