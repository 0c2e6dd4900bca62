package main

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	hooxsql "github.com/hoox/hoox/sql"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parseConfig("serve", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set: hoox serve needs a Postgres connection string (or run 'hoox dev')")
	}
	if cfg.API.WebhookSecret == "" {
		return errors.New("HOOX_WEBHOOK_SECRET is not set: hoox serve refuses to take signals without a secret")
	}
	logger, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, logger, nil)
}

// App is a running hoox: pools, River, the HTTP server.
type App struct {
	cfg      Config
	log      *slog.Logger
	pool     *pgxpool.Pool
	venue    *pgxpool.Pool
	markers  *pgxpool.Pool
	river    *river.Client[pgx.Tx]
	gateway  *gateway.Service
	server   *api.Server
	listener net.Listener
	Paper    *paper.Venue

	// sqldb is database/sql over pool, for goose's readiness check.
	sqldb *stdsql.DB
}

// Addr is the address the server listens on (useful with port 0).
func (a *App) Addr() string { return a.listener.Addr().String() }

// startApp wires config → pools → migrations → River → HTTP and starts
// listening. Close undoes it in reverse.
func startApp(ctx context.Context, cfg Config, logger *slog.Logger) (_ *App, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	a := &App{cfg: cfg, log: logger}
	defer func() {
		if err != nil {
			a.Close(context.Background())
		}
	}()
	if !cfg.NoMigrate {
		if cfg.TxPooler {
			// goose's migration lock is a session advisory lock, which a
			// transaction pooler cannot hold across statements.
			return nil, errors.New("HOOX_TRANSACTION_POOLER is set: run 'hoox migrate up' against Postgres directly and start hoox with --no-migrate")
		}
		if err := migrateUp(ctx, cfg.DatabaseURL); err != nil {
			return nil, err
		}
	}
	claims, markers, venue := poolBudget(cfg.DBMaxConns, cfg.TxPooler)
	// The venue and the attempt markers get pools of their own: a request
	// holding a claim connection must never wait for a second connection
	// from the same pool. One health signal serves the three: after a
	// Postgres restart, the first dead connection any of them meets makes
	// all of them check theirs before a signal uses one.
	health := db.NewConnHealth()
	pools := []struct {
		dst **pgxpool.Pool
		cfg db.PoolConfig
	}{
		{&a.pool, db.PoolConfig{MaxConns: claims, AppName: "hoox"}},
		{&a.venue, paper.PoolConfig(venue)},
		{&a.markers, db.PoolConfig{MaxConns: markers, AppName: "hoox-markers"}},
	}
	for _, p := range pools {
		p.cfg.Health, p.cfg.NoPreparedStatements = health, cfg.TxPooler
		if cfg.TxPooler {
			// A pooler refuses (or drops) session settings sent at
			// startup; the venue's fills then commit synchronously.
			p.cfg.AsyncCommit = false
		}
		if *p.dst, err = db.NewPool(ctx, cfg.DatabaseURL, p.cfg); err != nil {
			return nil, err
		}
	}
	a.sqldb = stdlib.OpenDBFromPool(a.pool)
	a.Paper = paper.New(paper.Config{Pool: a.venue})
	if cfg.PaperFaults != "" {
		f, err := paper.ParseFaults(cfg.PaperFaults)
		if err != nil {
			return nil, fmt.Errorf("HOOX_PAPER_FAULTS: %w", err)
		}
		a.Paper.SetFaults(f)
		logger.Warn("paper venue fault drill active", "faults", cfg.PaperFaults)
	}
	entries, err := cfg.venueEntries(logger)
	if err != nil {
		return nil, err
	}
	venues := exchange.NewRegistryOf(append([]exchange.Entry{{Name: exchange.PaperName, Live: a.Paper}}, entries...)...)
	notifier, err := jobs.NewNotifier(cfg.Notify)
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}
	sender, err := notify.New(cfg.Notify)
	if err != nil {
		return nil, fmt.Errorf("notifications: %w", err)
	}

	reg := prometheus.NewRegistry()
	api.RegisterRuntimeMetrics(reg)
	// River: the gateway inserts reconcile jobs through it; once started it
	// works them, and the elected leader schedules the purge.
	jobMetrics := jobs.NewMetrics(reg)
	if a.river, err = jobs.NewClient(a.pool, cfg.Jobs, jobs.Deps{Venues: venues, Logger: logger, Metrics: jobMetrics,
		IntentPool: a.markers, Notifier: notifier, NotifySender: sender, Registry: reg}); err != nil {
		return nil, err
	}
	gw := gateway.New(cfg.Gateway,
		gateway.Deps{Pool: a.pool, MarkerPool: a.markers, Venues: venues, Jobs: a.river, Notifier: notifier, Logger: logger, Metrics: gateway.NewMetrics(reg),
			AfterVenue: crashDrill(cfg.CrashDrill, logger)})
	a.gateway = gw
	a.server = api.New(cfg.API,
		api.Deps{Gateway: gw, Pool: a.pool, Venues: venues, Ready: a.ready, Logger: logger, Registry: reg,
			Admin: &api.Admin{Pool: a.pool, River: a.river, Logger: logger, Notifier: notifier,
				Purge: func(ctx context.Context) (db.PurgeResult, error) {
					res, err := db.Purge(ctx, a.pool, db.PurgeParams{Batch: cfg.Jobs.PurgeBatch, AuditRetention: cfg.Jobs.AuditRetention, Duty: db.DefaultPurgeDuty, Actor: "admin"})
					jobMetrics.ObservePurge(res)
					return res, err
				}}})

	if a.listener, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	go func() {
		if err := a.server.Serve(a.listener); err != nil {
			logger.Error("http server stopped", "error", err)
		}
	}()
	// Detached from ctx: shutdown stops River gracefully in Close, after
	// the HTTP server, instead of cancelling running jobs.
	if err := a.river.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start river: %w", err)
	}
	logger.Info("hoox listening", "addr", a.Addr())
	return a, nil
}

// poolBudget sizes the claim, intent (marker) and paper venue pools from
// HOOX_DB_MAX_CONNS. Connected to Postgres directly each gets n: they are
// separate so a claim holding a connection never waits on its own pool.
// Through a transaction-pooling PgBouncer the three share the pooler's
// server connections, and a claim holds one across the venue call while it
// waits for an intent's: if claims alone could take every server
// connection, each would wait for one that never frees. There n is hoox's
// whole budget, split so the pools together never exceed it: with the
// budgets of all replicas within PgBouncer's pool size, no request ever
// queues at the pooler.
func poolBudget(n int, pooler bool) (claims, markers, venue int32) {
	if !pooler {
		return int32(n), int32(n), int32(n)
	}
	side := max(n/4, 1)
	return int32(n - 2*side), int32(side), int32(side)
}

// ready is /readyz: the database answers and the schema is current. It
// names the failed check with an *api.ReadyError; the error's text (user,
// database, socket path) only reaches the log.
func (a *App) ready(ctx context.Context) error {
	if err := a.pool.Ping(ctx); err != nil {
		return &api.ReadyError{Check: api.ReadyDatabase, Err: db.Translate(err)}
	}
	current, err := hooxsql.Current(ctx, a.sqldb)
	if err != nil {
		return &api.ReadyError{Check: api.ReadyMigrations, Err: err}
	}
	if !current {
		return &api.ReadyError{Check: api.ReadyMigrations, Err: errors.New("migrations are pending: run 'hoox migrate up'")}
	}
	return nil
}

// Close shuts down in reverse: stop accepting, let in-flight requests finish
// (bounded), stop River, close the pools.
func (a *App) Close(ctx context.Context) {
	if a.server != nil && a.listener != nil {
		sctx, cancel := context.WithTimeout(ctx, a.cfg.ShutdownWait)
		if err := a.server.Shutdown(sctx); err != nil {
			a.log.Warn("shutdown: in-flight requests cut off", "error", err)
		}
		cancel()
	}
	if a.gateway != nil {
		a.gateway.Close()
	}
	if a.river != nil {
		// Running jobs get StopTimeout (ShutdownWait) to finish, then their
		// contexts are cancelled; a cut-off reconcile rolls back and runs
		// again on another replica or the next start.
		rctx, cancel := context.WithTimeout(ctx, 2*a.cfg.ShutdownWait+5*time.Second)
		if err := a.river.Stop(rctx); err != nil {
			a.log.Warn("shutdown: background jobs cut off", "error", err)
		}
		cancel()
	}
	if a.sqldb != nil {
		_ = a.sqldb.Close()
	}
	for _, p := range []*pgxpool.Pool{a.markers, a.venue, a.pool} {
		if p != nil {
			p.Close()
		}
	}
}

// serve runs hoox until ctx ends. ready, when set, is called once it listens.
func serve(ctx context.Context, cfg Config, logger *slog.Logger, ready func(*App)) error {
	a, err := startApp(ctx, cfg, logger)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(a)
	}
	<-ctx.Done()
	logger.Info("shutting down")
	a.Close(context.Background())
	return nil
}

// crashDrill returns the gateway hook that kills this process at the worst
// moment — the venue holds the order, the claim is not committed — so an
// operator (and the fault tests) can see the next attempt adopt the order.
func crashDrill(enabled bool, logger *slog.Logger) func(string) {
	if !enabled {
		return nil
	}
	logger.Warn("crash drill active: hoox kills itself after the first venue answer")
	return func(traceID string) {
		logger.Error("crash drill: killing hoox between the venue's answer and the commit", "trace_id", traceID)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way; never reach the commit
	}
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("HOOX_LOG_LEVEL: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("HOOX_LOG_FORMAT: %q is neither json nor text", format)
}

func migrateUp(ctx context.Context, url string) error {
	sqldb, err := hooxsql.Open(url)
	if err != nil {
		return err
	}
	defer sqldb.Close()
	return hooxsql.Up(ctx, sqldb)
}

// shutdownTimeout bounds the whole shutdown of dev's embedded Postgres.
const shutdownTimeout = 30 * time.Second
