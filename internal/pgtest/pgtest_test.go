package pgtest_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// tableExists reports whether a table is visible in the pool's database.
func tableExists(t *testing.T, pool *pgxpool.Pool, table string) bool {
	t.Helper()
	var exists bool
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists))
	return exists
}

func TestEachTestGetsAMigratedDatabase(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.NewPool(t)
			for _, table := range []string{"trace_ids", "orders", "trace_events", "river_job"} {
				require.True(t, tableExists(t, pool, table), "table %s", table)
			}
			var goose int
			require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM goose_db_version WHERE version_id > 0").Scan(&goose))
			require.Positive(t, goose, "the migrations are recorded, so hoox does not migrate again")
		})
	}
}

func TestDatabasesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := pgtest.NewPool(t)
	b := pgtest.NewPool(t)
	_, err := a.Exec(ctx, "CREATE TABLE scratch (x int); INSERT INTO scratch VALUES (1)")
	require.NoError(t, err)
	require.True(t, tableExists(t, a, "scratch"))
	require.False(t, tableExists(t, b, "scratch"), "a write in one test's database shows in another's")
}

func TestDatabaseIsDroppedAfterTheTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var name string
	t.Run("user", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		cfg, err := pgx.ParseConfig(url)
		require.NoError(t, err)
		name = cfg.Database
		conn, err := pgx.ConnectConfig(ctx, cfg)
		require.NoError(t, err)
		// Left open on purpose: the drop must not depend on tests closing
		// their connections.
		t.Cleanup(func() { _ = conn.Close(context.Background()) })
		var got string
		require.NoError(t, conn.QueryRow(ctx, "SELECT current_database()").Scan(&got))
		require.Equal(t, name, got)
	})
	require.NotEmpty(t, name)

	admin, err := pgx.Connect(ctx, pgtest.Server(t).AdminURL())
	require.NoError(t, err)
	defer admin.Close(ctx)
	var n int
	require.NoError(t, admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n))
	require.Zero(t, n, "database %s outlived its test", name)
}

func TestClusterCanBeStoppedAndStarted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := pgtest.NewCluster(t)
	pool, err := pgxpool.New(ctx, c.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	require.True(t, tableExists(t, pool, "trace_ids"), "the cluster's database is migrated")

	require.NoError(t, c.Stop(ctx))
	require.Error(t, pool.Ping(ctx), "the database is down")

	require.NoError(t, c.Start(ctx))
	require.NoError(t, pool.Ping(ctx), "the pool reconnects once the database is back")
	require.True(t, tableExists(t, pool, "trace_ids"))
}
