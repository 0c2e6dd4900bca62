package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/internal/localpg"
)

// setupTimeout bounds starting the server (a container pull can be slow)
// and each database operation.
const setupTimeout = 3 * time.Minute

// ServerInfo describes the test binary's shared server.
type ServerInfo struct {
	adminURL string
	source   Source
}

// AdminURL returns a connection string to the server's postgres database,
// as a superuser (or whatever TEST_DATABASE_URL grants). Tests must not stop
// the shared server; NewCluster gives a server a test may stop.
func (s ServerInfo) AdminURL() string { return s.adminURL }

// Source tells where the server came from.
func (s ServerInfo) Source() Source { return s.source }

// Server starts the shared server if needed and describes it.
func Server(t testing.TB) ServerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := global.ensure(ctx); err != nil {
		t.Fatalf("test database: %v", err)
	}
	global.mu.Lock()
	defer global.mu.Unlock()
	return ServerInfo{adminURL: global.srv.adminURL(), source: global.source}
}

// NewDatabase creates a fresh, fully migrated database for this test and
// returns its connection string (for a pool, or for a hoox process the test
// spawns). The database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	info := Server(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	name, err := global.newDatabase(ctx, t.Name())
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		global.mu.Lock()
		admin, closed := global.admin, global.closed
		global.mu.Unlock()
		if closed {
			return // Main already dropped everything (a signal)
		}
		if err := dropDatabase(ctx, admin, name); err != nil {
			t.Errorf("drop test database: %v", err)
		}
	})
	u, err := withDatabase(info.AdminURL(), name)
	if err != nil {
		t.Fatalf("test database: %v", err)
	}
	return u
}

// NewPool returns a pool on a fresh migrated database (see NewDatabase),
// closed when the test ends.
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return OpenPool(t, NewDatabase(t))
}

// OpenPool opens and pings a pool on url (a database from NewDatabase, or a
// Cluster's), closed when the test ends. Tests that need several pools on
// one database (the gateway's claim, marker and venue pools) call it once
// for each.
func OpenPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("test pool: %v", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("test pool: %v", err)
	}
	// Registered after NewDatabase's drop, so it runs first: the pool lets
	// go of the database before it is dropped.
	t.Cleanup(pool.Close)
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("test pool: %v", err)
	}
	return pool
}

// Cluster is a PostgreSQL server of the test's own, for tests that stop and
// start it (readiness while the database is down, reconnects). The embedded
// localpg.Cluster's Stop and Start do that; DatabaseURL names a migrated
// database "hoox" in it.
type Cluster struct {
	*localpg.Cluster
	// DatabaseURL is the connection string of the migrated database.
	DatabaseURL string

	dir string
}

// NewCluster starts a throwaway cluster from the installed server binaries
// with a migrated database, removed when the test ends. It skips the test
// when there are no binaries (a CI that only provides TEST_DATABASE_URL):
// neither a shared server nor a container can be stopped by one test alone.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	if _, err := localpg.FindBinDir(); err != nil {
		t.Skipf("needs a PostgreSQL server it can stop and start: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	global.mu.Lock()
	if global.closed {
		global.mu.Unlock()
		t.Fatalf("test database harness is shut down")
	}
	global.mu.Unlock()

	lb, err := startLocal(ctx)
	if err != nil {
		t.Fatalf("test cluster: %v", err)
	}
	c := &Cluster{Cluster: lb.cluster, DatabaseURL: lb.cluster.URL("hoox"), dir: lb.dir}
	global.mu.Lock()
	global.clusters[c] = struct{}{}
	global.mu.Unlock()
	t.Cleanup(func() {
		global.mu.Lock()
		delete(global.clusters, c)
		global.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.remove(ctx); err != nil {
			t.Errorf("remove test cluster: %v", err)
		}
	})
	if err := createAndMigrate(ctx, c); err != nil {
		t.Fatalf("test cluster: %v", err)
	}
	return c
}

func createAndMigrate(ctx context.Context, c *Cluster) error {
	pool, err := pgxpool.New(ctx, c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	_, err = pool.Exec(ctx, "CREATE DATABASE hoox")
	pool.Close()
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return migrate(ctx, c.DatabaseURL)
}

func (c *Cluster) remove(ctx context.Context) error {
	return localBackend{cluster: c.Cluster, dir: c.dir}.close(ctx)
}
