package pgtest

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// HookedPool opens a pool on url whose every acquisition first calls hook
// with its number (1 for the first): a hook may block there (an attempt
// paused at a chosen step) or return an error, which fails that
// acquisition as a broken connection would fail its statement. The pool
// is closed when the test ends and is not pinged, so the test's own
// acquisitions are the only ones counted.
func HookedPool(t testing.TB, url string, hook func(ctx context.Context, n int32) error) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("hooked pool: %v", err)
	}
	var acquired atomic.Int32
	cfg.PrepareConn = func(ctx context.Context, _ *pgx.Conn) (bool, error) {
		return true, hook(ctx, acquired.Add(1))
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("hooked pool: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TerminateLockHolder ends the one session holding an advisory lock in
// pool's database (a claim, or a leg pass, under way): its connection is
// lost, and the lock with it, while the attempt that held it goes on.
func TerminateLockHolder(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	var terminated bool
	if err := pool.QueryRow(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_locks
WHERE locktype = 'advisory' AND granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("terminate the lock holder: terminated %v, %v", terminated, err)
	}
}
