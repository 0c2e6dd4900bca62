package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/pgtest"
)

// Every way of running a statement on a Bounded pool is cancelled by
// Postgres at its timeout, and a statement within it commits and leaves
// the connection with the server's own setting.
func TestBoundedStopsEveryKindOfStatementAtItsTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	b := db.Bounded{Pool: pool, Timeout: 100 * time.Millisecond}
	cancelled := func(err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%v", err)
		require.Equal(t, "57014", pgErr.Code)
		require.ErrorIs(t, db.Translate(err), db.ErrStatementTimeout)
	}
	const slow = `SELECT pg_sleep(5)`

	_, err := b.Exec(ctx, slow)
	cancelled(err)
	cancelled(b.QueryRow(ctx, slow).Scan(nil))
	rows, err := b.Query(ctx, slow)
	require.NoError(t, err)
	_, err = pgx.CollectRows(rows, pgx.RowTo[string])
	cancelled(err)
	batch := &pgx.Batch{}
	batch.Queue(slow)
	cancelled(b.SendBatch(ctx, batch).Close())
	cancelled(pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, slow)
		return err
	}))

	// Within the timeout: committed, and the setting did not outlive it.
	_, err = b.Exec(ctx, `CREATE TABLE bounded_probe (n int)`)
	require.NoError(t, err)
	rows, err = b.Query(ctx, `INSERT INTO bounded_probe VALUES (1), (2) RETURNING n`)
	require.NoError(t, err)
	ns, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2}, ns)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM bounded_probe`).Scan(&n))
	require.Equal(t, 2, n, "the query's transaction committed")
	for range 4 {
		var setting string
		require.NoError(t, pool.QueryRow(ctx, `SHOW statement_timeout`).Scan(&setting))
		require.Equal(t, "0", setting)
	}
}

// A Bounded snapshot reads the database as of one moment: a row another
// session commits between two of its reads is seen by neither, each of
// its statements is still stopped at the timeout, and it writes nothing.
func TestBoundedSnapshotReadsOneMomentUnderTheTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	b := db.Bounded{Pool: pool, Timeout: 100 * time.Millisecond}
	_, err := pool.Exec(ctx, `CREATE TABLE snapshot_probe (n int)`)
	require.NoError(t, err)
	count := func(q db.DBTX) int {
		t.Helper()
		var n int
		require.NoError(t, q.QueryRow(ctx, `SELECT count(*) FROM snapshot_probe`).Scan(&n))
		return n
	}

	err = b.Snapshot(ctx, func(q db.DBTX) error {
		require.Zero(t, count(q))
		_, err := pool.Exec(ctx, `INSERT INTO snapshot_probe VALUES (1)`)
		require.NoError(t, err)
		require.Zero(t, count(q), "the second read saw a row committed after the first")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 1, count(pool))

	err = b.Snapshot(ctx, func(q db.DBTX) error {
		_, err := q.Exec(ctx, `SELECT pg_sleep(5)`)
		return err
	})
	require.ErrorIs(t, db.Translate(err), db.ErrStatementTimeout)
	err = b.Snapshot(ctx, func(q db.DBTX) error {
		_, err := q.Exec(ctx, `INSERT INTO snapshot_probe VALUES (2)`)
		return err
	})
	var pgErr *pgconn.PgError
	require.ErrorAs(t, err, &pgErr)
	require.Equal(t, "25006", pgErr.Code, "read_only_sql_transaction")
	require.Equal(t, 1, count(pool))
}
