// Package app wires a hoox process: config → pools → migrations → River →
// gateway → HTTP server, and shuts it down in reverse. cmd/hoox (serve,
// dev, bench) and the process tests start hoox through New, so there is
// one wiring to read and to test.
package app

import (
	"context"
	stdsql "database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pace"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/sql/migrations"
)

// App is a running hoox: pools, River, the gateway, the HTTP server.
type App struct {
	cfg      Config
	log      *slog.Logger
	pools    *Pools
	river    *river.Client[pgx.Tx]
	gateway  *gateway.Service
	server   *api.Server
	listener net.Listener
	paper    *paper.Venue
	registry *prometheus.Registry

	// sqldb is database/sql over the claim pool, for goose's readiness
	// check.
	sqldb *stdsql.DB
}

// Addr is the address the server listens on (useful with port 0).
func (a *App) Addr() string { return a.listener.Addr().String() }

// Metrics is the process's Prometheus registry (what /metrics serves), so
// the benchmarks read the stage histograms in-process.
func (a *App) Metrics() prometheus.Gatherer { return a.registry }

// Pools are the process's database pools, so the benchmarks can read their
// wait statistics.
func (a *App) Pools() *Pools { return a.pools }

// Paper is the paper venue, so fault drills and tests can set its faults.
func (a *App) Paper() *paper.Venue { return a.paper }

// New validates cfg, then wires config → pools → migrations → River → HTTP
// and starts listening on cfg.Addr. Close undoes it in reverse.
func New(ctx context.Context, cfg Config, logger *slog.Logger) (_ *App, err error) {
	if err := cfg.Validate(); err != nil {
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
	if a.pools, err = OpenPools(ctx, PoolsConfig{DatabaseURL: cfg.DatabaseURL, MaxConns: cfg.DBMaxConns, MinConns: cfg.DBMinConns, TxPooler: cfg.TxPooler}); err != nil {
		return nil, err
	}
	pool := a.pools.Claims
	if err := checkReplication(ctx, pool, cfg.AllowAsyncReplication, logger); err != nil {
		return nil, err
	}
	a.sqldb = stdlib.OpenDBFromPool(pool)
	a.paper = paper.New(paper.Config{Pool: a.pools.Paper})
	if cfg.PaperFaults != "" {
		f, err := paper.ParseFaults(cfg.PaperFaults)
		if err != nil {
			return nil, fmt.Errorf("HOOX_PAPER_FAULTS: %w", err)
		}
		a.paper.SetFaults(f)
		logger.Warn("paper venue fault drill active", "faults", cfg.PaperFaults)
	}
	if cfg.ClockSkew != 0 {
		logger.Warn("clock skew drill active: this replica's clock is offset", "skew", cfg.ClockSkew.String())
		cfg.Timing.Now = cfg.clock()
	}
	entries, err := cfg.venueEntries(logger)
	if err != nil {
		return nil, err
	}
	accounts, err := cfg.accountEntries(logger, a.pools.Paper)
	if err != nil {
		return nil, err
	}
	entries = append(entries, accounts...)
	venues := exchange.NewRegistryOf(append([]exchange.Entry{{Name: exchange.PaperName, Live: a.paper}}, entries...)...)
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
	reg.MustRegister(newStateCollector(a.ready, a.pools, venues))
	// River: the gateway inserts reconcile jobs through it; once started it
	// works them, and the elected leader schedules the purge.
	jobMetrics := jobs.NewMetrics(reg)
	// The purge yields to the signals this replica serves.
	signals := pace.New()
	if a.river, err = jobs.NewClient(pool, cfg.jobsConfig(), jobs.Deps{Venues: venues, Logger: logger, Metrics: jobMetrics, PurgePacer: signals,
		IntentPool: a.pools.Markers, Notifier: notifier, NotifySender: sender, Registry: reg,
		AfterLeg: crashDrill(cfg.CrashLegDrill, logger)}); err != nil {
		return nil, err
	}
	gwMetrics := gateway.NewMetrics(reg)
	// The client order ID namespace, read once: it never changes.
	deployment, err := db.Deployment(ctx, pool)
	if err != nil {
		return nil, err
	}
	a.gateway = gateway.New(cfg.gatewayConfig(),
		gateway.Deps{Pool: pool, MarkerPool: a.pools.Markers, Venues: venues, Jobs: a.river, Notifier: notifier, Logger: logger,
			Metrics: gwMetrics, Latency: signals, AfterVenue: crashDrill(cfg.CrashDrill, logger), Deployment: deployment,
			AfterLeg: crashDrill(cfg.CrashLegDrill, logger)})
	a.registry = reg
	a.server = api.New(cfg.apiConfig(),
		api.Deps{Gateway: a.gateway, Pool: pool, Venues: venues, Ready: a.ready, Logger: logger, Registry: reg, Stages: gwMetrics,
			Admin: &api.Admin{Pool: pool, River: a.river, Logger: logger, Notifier: notifier}})

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

// ready is /readyz: the database answers and the schema is current. It
// names the failed check with an *api.ReadyError; the error's text (user,
// database, socket path) only reaches the log.
func (a *App) ready(ctx context.Context) error {
	if err := a.pools.Claims.Ping(ctx); err != nil {
		return &api.ReadyError{Check: api.ReadyDatabase, Err: db.Translate(err)}
	}
	current, err := migrations.Current(ctx, a.sqldb)
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
	if a.pools != nil {
		a.pools.Close()
	}
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

// migrateUp applies every pending migration to the database at url.
func migrateUp(ctx context.Context, url string) error {
	sqldb, err := migrations.Open(url)
	if err != nil {
		return err
	}
	defer sqldb.Close()
	return migrations.Up(ctx, sqldb)
}
