package migrations_test

import (
	"context"
	stdsql "database/sql"
	"sync"
	"testing"

	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/sql/migrations"
)

func TestMain(m *testing.M) { pgtest.MainLeakChecked(m, nil) }

func tableExists(t *testing.T, ctx context.Context, url, table string) bool {
	t.Helper()
	db, err := migrations.Open(url)
	require.NoError(t, err)
	defer db.Close()
	var ok bool
	require.NoError(t, db.QueryRowContext(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&ok))
	return ok
}

// hooxTables are the tables the migrations create, River's included.
var hooxTables = []string{"trace_ids", "orders", "trace_events", "settings", "paper_orders", "river_job"}

// freshDatabase returns a migrated database, a handle on it and a goose
// provider over it, all closed when the test ends.
func freshDatabase(t *testing.T) (string, *stdsql.DB, *goose.Provider) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	db, err := migrations.Open(url)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	p, err := migrations.NewProvider(db)
	require.NoError(t, err)
	return url, db, p
}

func TestUpDownToZeroAndUpAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db, p := freshDatabase(t)

	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.True(t, current, "the harness database is fully migrated")

	_, err = p.DownTo(ctx, 0)
	require.NoError(t, err)
	for _, table := range hooxTables {
		require.False(t, tableExists(t, ctx, url, table), "%s survives down to zero", table)
	}
	current, err = migrations.Current(ctx, db)
	require.NoError(t, err)
	require.False(t, current)

	require.NoError(t, migrations.Up(ctx, db))
	for _, table := range hooxTables {
		require.True(t, tableExists(t, ctx, url, table), "%s is back after up", table)
	}
	latest, err := migrations.LatestVersion()
	require.NoError(t, err)
	v, err := p.GetDBVersion(ctx)
	require.NoError(t, err)
	require.Equal(t, latest, v)
}

// Replicas starting together all migrate; the session lock makes them take
// turns instead of failing on each other's half-made tables.
func TestConcurrentMigrationsTakeTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, db, p := freshDatabase(t)
	_, err := p.DownTo(ctx, 0)
	require.NoError(t, err)

	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			db, err := migrations.Open(url)
			if err != nil {
				errs[i] = err
				return
			}
			defer db.Close()
			errs[i] = migrations.Up(ctx, db)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	current, err := migrations.Current(ctx, db)
	require.NoError(t, err)
	require.True(t, current)
}
