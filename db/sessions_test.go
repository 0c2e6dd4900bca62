package db_test

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

func TestUISessionLivesWhileUsedAndEndsAtLogout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	hash := sha256.Sum256([]byte("cookie-token"))

	s, err := db.CreateUISession(ctx, pool, db.NewUISession{TokenHash: hash[:], CSRFToken: "csrf", SourceIP: "192.0.2.7", Idle: time.Hour})
	require.NoError(t, err)
	require.Equal(t, "csrf", s.CSRFToken)
	require.Equal(t, "192.0.2.7", *s.SourceIP)
	require.WithinDuration(t, s.CreatedAt.Add(time.Hour), s.ExpiresAt, time.Second)

	got, err := db.GetUISession(ctx, pool, hash[:])
	require.NoError(t, err)
	require.Equal(t, s.ExpiresAt, got.ExpiresAt, "reading does not extend the session")

	touched, err := db.TouchUISession(ctx, pool, hash[:], 2*time.Hour)
	require.NoError(t, err)
	require.True(t, touched.ExpiresAt.After(s.ExpiresAt), "use extends the session")

	other := sha256.Sum256([]byte("another"))
	_, err = db.GetUISession(ctx, pool, other[:])
	require.ErrorIs(t, err, db.ErrNotFound)

	require.NoError(t, db.DeleteUISession(ctx, pool, hash[:]))
	_, err = db.GetUISession(ctx, pool, hash[:])
	require.ErrorIs(t, err, db.ErrNotFound)
	_, err = db.TouchUISession(ctx, pool, hash[:], time.Hour)
	require.ErrorIs(t, err, db.ErrNotFound)
	require.NoError(t, db.DeleteUISession(ctx, pool, hash[:]), "a second logout is harmless")
}

func TestUISessionExpiresAndIsSweptAtTheNextLogin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	old := sha256.Sum256([]byte("old"))
	_, err := db.CreateUISession(ctx, pool, db.NewUISession{TokenHash: old[:], CSRFToken: "c", Idle: time.Hour})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE ui_sessions SET expires_at = now() - interval '1 second'")
	require.NoError(t, err)

	_, err = db.GetUISession(ctx, pool, old[:])
	require.ErrorIs(t, err, db.ErrNotFound)
	_, err = db.TouchUISession(ctx, pool, old[:], time.Hour)
	require.ErrorIs(t, err, db.ErrNotFound, "an expired session cannot be revived")

	fresh := sha256.Sum256([]byte("fresh"))
	_, err = db.CreateUISession(ctx, pool, db.NewUISession{TokenHash: fresh[:], CSRFToken: "c", Idle: time.Hour})
	require.NoError(t, err)
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM ui_sessions").Scan(&n))
	require.Equal(t, 1, n, "the expired session was swept")
}

func TestAttemptLoginDelaysAfterFreeTries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	th := db.LoginThrottle{FreeTries: 2, Delay: time.Hour, MaxDelay: 3 * time.Hour}
	checked := 0
	wrong := func() bool { checked++; return false }
	right := func() bool { checked++; return true }

	r, err := db.AttemptLogin(ctx, pool, "192.0.2.1", th, wrong)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{Failures: 1}, r)
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.1", th, wrong)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{Failures: 2, RetryAfter: time.Hour}, r, "the last free try starts a wait")

	// While waiting the right token gets through, and clears nothing.
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.1", th, right)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{OK: true}, r)
	// A wrong one during the wait is counted, refused as blocked, and
	// lengthens the wait.
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.1", th, wrong)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{Failures: 3, Blocked: true, RetryAfter: 2 * time.Hour}, r)
	require.Equal(t, 4, checked)

	// Another address is not held up.
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.2", th, wrong)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{Failures: 1}, r)

	// Once the wait is over, the next wrong token doubles it, up to
	// MaxDelay.
	_, err = pool.Exec(ctx, "UPDATE ui_login_failures SET blocked_until = now() - interval '1 second'")
	require.NoError(t, err)
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.1", th, wrong)
	require.NoError(t, err)
	require.Equal(t, db.LoginResult{Failures: 4, RetryAfter: 3 * time.Hour}, r, "capped at MaxDelay")

	// A wait is never shortened by a later wrong token's shorter delay.
	_, err = pool.Exec(ctx, "UPDATE ui_login_failures SET blocked_until = now() + interval '10 hours' WHERE client_ip = '192.0.2.1'")
	require.NoError(t, err)
	r, err = db.AttemptLogin(ctx, pool, "192.0.2.1", th, wrong)
	require.NoError(t, err)
	require.True(t, r.Blocked)
	require.InDelta(t, (10 * time.Hour).Seconds(), r.RetryAfter.Seconds(), 5)
}

func TestLoginThrottleDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, db.DefaultLoginThrottle(), db.LoginThrottle{}.WithDefaults())
	th := db.LoginThrottle{FreeTries: 1, Delay: time.Hour}.WithDefaults()
	require.Equal(t, 1, th.FreeTries, "a set field is kept")
	require.Equal(t, time.Hour, th.MaxDelay, "the ceiling is never below the first delay")
	require.Equal(t, db.DefaultLoginThrottle().Forget, th.Forget)
}

func TestAttemptLoginCountsParallelGuessesOneByOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	th := db.LoginThrottle{FreeTries: 3, Delay: time.Hour}
	var mu sync.Mutex
	blocked := 0
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := db.AttemptLogin(ctx, pool, "198.51.100.9", th, func() bool { return false })
			require.NoError(t, err)
			mu.Lock()
			defer mu.Unlock()
			if r.Blocked {
				blocked++
			}
		}()
	}
	wg.Wait()
	require.Equal(t, 7, blocked, "ten guesses at once: only the free tries are answered as wrong, the rest as too many")
	var failures int
	require.NoError(t, pool.QueryRow(ctx, "SELECT failures FROM ui_login_failures WHERE client_ip = '198.51.100.9'").Scan(&failures))
	require.Equal(t, 10, failures, "every guess counted")
}

func TestEventsPerMinuteCountsTrafficNotAdminActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	now := time.Now()
	insertEvent(t, pool, "k:a", "received", now, nil)
	insertEvent(t, pool, "k:b", "received", now, nil)
	insertEvent(t, pool, "k:b", "duplicate", now, nil)
	insertEvent(t, pool, "k:c", "dispatched", now, nil)
	insertEvent(t, pool, "k:old", "received", now.Add(-3*time.Hour), nil)
	insertEvent(t, pool, db.KillSwitchTraceID, "received", now, nil)

	s, err := db.EventsPerMinute(ctx, pool, 60, []string{"received", "duplicate"})
	require.NoError(t, err)
	require.Equal(t, 59*time.Minute, s.End.Sub(s.Start))
	total := map[string]int64{}
	for _, c := range s.Counts {
		require.False(t, c.Minute.Before(s.Start))
		require.False(t, c.Minute.After(s.End))
		total[c.Event] += c.Count
	}
	require.Equal(t, map[string]int64{"received": 2, "duplicate": 1}, total)
}
