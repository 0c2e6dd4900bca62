// Package pgtest is hoox's test database harness. (It was the folder
// testcontainers/, a name that read as the library it may use.) A test
// binary gets one PostgreSQL server, chosen in order of preference:
// TEST_DATABASE_URL; a testcontainers-go container when a Docker engine
// answers; else a throwaway cluster from the installed server binaries
// (internal/localpg).
// The schema is migrated once into a template database, and every test gets
// its own clone, so tests run in parallel and leave nothing behind.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// then NewPool(t) or NewDatabase(t) in each test.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/internal/localpg"
	"github.com/hoox/hoox/sql/migrations"
)

// global is the one harness of this test binary. It is package-level state
// on purpose: a test binary should start one server however many packages'
// helpers ask for it, and Main must find it to clean up. Everything in it is
// guarded by its mutexes.
var global = newHarness()

// harness owns the server, the admin pool and the template database.
type harness struct {
	runID  string                  // distinguishes this process's databases on a shared server
	getenv func(key string) string // os.Getenv; replaced in tests

	mu       sync.Mutex
	started  bool
	startErr error
	closed   bool
	source   Source
	srv      backend
	admin    *pgxpool.Pool
	template string
	seq      int
	clusters map[*Cluster]struct{} // dedicated clusters, removed on a signal

	// createMu serialises CREATE DATABASE: Postgres refuses to copy a
	// template that another CREATE DATABASE is copying at the same moment.
	createMu sync.Mutex
}

func newHarness() *harness {
	b := make([]byte, 3)
	_, _ = rand.Read(b) // never fails on supported platforms
	return &harness{
		runID:    fmt.Sprintf("%d_%s", os.Getpid(), hex.EncodeToString(b)),
		getenv:   os.Getenv,
		clusters: map[*Cluster]struct{}{},
	}
}

// Main runs the tests, then stops the server and removes its files, and
// exits with the tests' code. An interrupt (SIGINT, SIGTERM) during the run
// cleans up too and exits non-zero, so Ctrl-C leaves no server behind.
func Main(m *testing.M) {
	os.Exit(Run(m))
}

// MainLeakChecked is Main, and after a green run it also fails the binary
// if any goroutine outlived its test (goleak). beforeCheck, when set, runs
// first: closing a test HTTP client's idle connections, say.
func MainLeakChecked(m *testing.M, beforeCheck func()) {
	os.Exit(RunLeakChecked(m, beforeCheck))
}

// RunLeakChecked is MainLeakChecked without the exit, for a TestMain with
// more to clean up.
func RunLeakChecked(m *testing.M, beforeCheck func()) int {
	code := Run(m)
	if code == 0 {
		if beforeCheck != nil {
			beforeCheck()
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// Run is Main without the exit, for a TestMain that checks more after the
// tests (goleak.Find, say): the harness's connections are closed by then.
func Run(m *testing.M) int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case sig := <-signals:
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := global.close(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "pgtest: cleanup after signal:", err)
			}
			code := 1
			if s, ok := sig.(syscall.Signal); ok {
				code = 128 + int(s)
			}
			os.Exit(code)
		case <-done:
		}
	}()
	code := m.Run()
	signal.Stop(signals)
	close(done)
	<-exited

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := global.close(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest: cleanup:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// ensure starts the server and migrates the template on first use. A
// failure is remembered: every test fails with the same clear reason instead
// of each trying again.
func (h *harness) ensure(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("test database harness is shut down")
	}
	if !h.started {
		h.started = true
		h.startErr = h.start(ctx)
	}
	return h.startErr
}

func (h *harness) start(ctx context.Context) error {
	envURL := h.getenv(EnvDatabaseURL)
	src, err := choose(envURL, func() bool { return dockerUp(ctx) }, localpg.FindBinDir)
	if err != nil {
		return err
	}
	h.source = src
	h.template = "hoox_template"
	switch src {
	case SourceEnv:
		// A shared server may serve several test binaries at once.
		h.template = "hoox_" + h.runID + "_template"
		h.srv = envBackend{url: envURL}
	case SourceDocker:
		if h.srv, err = startDocker(ctx); err != nil {
			return err
		}
	case SourceLocal:
		sweep(ctx)
		if h.srv, err = startLocal(ctx); err != nil {
			return err
		}
	}
	cfg, err := pgxpool.ParseConfig(h.srv.adminURL())
	if err != nil {
		return fmt.Errorf("parse admin URL: %w", err)
	}
	cfg.MaxConns = 4
	if h.admin, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("admin pool: %w", err)
	}
	if err := h.admin.Ping(ctx); err != nil {
		return fmt.Errorf("connect to test server (%s): %w", src, err)
	}
	return h.migrateTemplate(ctx)
}

// migrateTemplate creates the template and runs every migration in it once.
// It ends with connections disallowed: CREATE DATABASE refuses to copy a
// template while anyone is connected to it.
func (h *harness) migrateTemplate(ctx context.Context) error {
	tpl := pgx.Identifier{h.template}.Sanitize()
	if err := dropDatabase(ctx, h.admin, h.template); err != nil {
		return err
	}
	if _, err := h.admin.Exec(ctx, "CREATE DATABASE "+tpl); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	u, err := withDatabase(h.srv.adminURL(), h.template)
	if err != nil {
		return err
	}
	if err := migrate(ctx, u); err != nil {
		return err
	}
	if _, err := h.admin.Exec(ctx, "ALTER DATABASE "+tpl+" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false"); err != nil {
		return fmt.Errorf("seal template database: %w", err)
	}
	return nil
}

func migrate(ctx context.Context, url string) error {
	db, err := migrations.Open(url)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := migrations.Up(ctx, db); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return db.Close()
}

// dropDatabase drops name, a template included, disconnecting its sessions.
func dropDatabase(ctx context.Context, admin *pgxpool.Pool, name string) error {
	ident := pgx.Identifier{name}.Sanitize()
	var isTemplate bool
	err := admin.QueryRow(ctx, "SELECT datistemplate FROM pg_database WHERE datname = $1", name).Scan(&isTemplate)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("look up database %s: %w", name, err)
	}
	if isTemplate {
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" WITH IS_TEMPLATE false"); err != nil {
			return fmt.Errorf("unmark template %s: %w", name, err)
		}
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^a-z0-9_]+`)

// newDatabase clones the template into a database named after the test,
// so a leftover (after a crash) tells which test made it.
func (h *harness) newDatabase(ctx context.Context, testName string) (string, error) {
	h.mu.Lock()
	h.seq++
	name := fmt.Sprintf("hoox_%s_%d_%s", h.runID, h.seq, unsafeName.ReplaceAllString(strings.ToLower(testName), "_"))
	if len(name) > 63 { // Postgres truncates identifiers to 63 bytes
		name = name[:63]
	}
	admin, tpl := h.admin, h.template
	h.mu.Unlock()

	h.createMu.Lock()
	_, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{tpl}.Sanitize())
	h.createMu.Unlock()
	if err != nil {
		return "", fmt.Errorf("create test database: %w", err)
	}
	return name, nil
}

// close drops what this process made and stops the server. It is
// idempotent, and safe while tests still run (on a signal).
func (h *harness) close(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	for c := range h.clusters {
		errs = append(errs, c.remove(ctx))
	}
	if h.admin != nil {
		if h.source == SourceEnv {
			// A shared server outlives us: drop our template and any test
			// database an interrupted run did not get to drop.
			rows, err := h.admin.Query(ctx, "SELECT datname FROM pg_database WHERE starts_with(datname, $1)", "hoox_"+h.runID+"_")
			var names []string
			if err == nil {
				names, err = pgx.CollectRows(rows, pgx.RowTo[string])
			}
			errs = append(errs, err)
			for _, name := range names {
				errs = append(errs, dropDatabase(ctx, h.admin, name))
			}
		}
		h.admin.Close()
	}
	if h.srv != nil {
		errs = append(errs, h.srv.close(ctx))
	}
	return errors.Join(errs...)
}
