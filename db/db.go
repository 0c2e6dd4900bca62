// Package db owns hoox's connection pool and every SQL statement the service
// runs. Postgres errors are translated into this package's errors here, at
// the edge, so no caller inspects SQLSTATE codes.
package db

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors callers branch on.
var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrLockTimeout means another transaction held the lock longer than
	// lock_timeout allowed: the first attempt of a signal is still running.
	ErrLockTimeout = errors.New("lock wait timed out")
	// ErrUnavailable means Postgres could not be reached or dropped the
	// connection: nothing was committed.
	ErrUnavailable = errors.New("database unavailable")
	// ErrBusy means every connection of the pool stayed in use for as long
	// as the caller would wait for one: nothing was done. It wraps
	// ErrUnavailable, so callers that only tell "the database could not
	// take it" need not know it.
	ErrBusy = fmt.Errorf("every database connection is busy: %w", ErrUnavailable)
)

// DBTX is what both the pool and a transaction offer; every query function
// takes it so it can run inside or outside a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// PoolConfig sizes a pool. Zero values keep pgx's defaults.
type PoolConfig struct {
	MaxConns int32
	MinConns int32
	// AppName shows in pg_stat_activity, so operators can tell hoox's
	// gateway connections from the paper venue's.
	AppName string
	// AsyncCommit runs the pool's sessions with synchronous_commit off: a
	// commit returns before its WAL reaches the disk.
	AsyncCommit bool
	// Tracer, when set, sees every query (the benchmarks count round trips).
	Tracer pgx.QueryTracer
	// NoPreparedStatements keeps statements off the server (pgx describes
	// them and caches the description instead), as a transaction-pooling
	// PgBouncer before 1.21 requires: a prepared statement lives on one
	// server connection, the next transaction may run on another.
	NoPreparedStatements bool
	// Prepare lists statements every new connection prepares as soon as it
	// is made (named by their text, so pgx uses them for that very SQL):
	// the first signal on a fresh connection then pays no Parse/Describe
	// round trip. A statement that fails to prepare (its table is not
	// migrated yet) is left to be prepared on first use. Ignored with
	// NoPreparedStatements.
	Prepare []string
	// Health, shared by a process's pools, makes every pool check its
	// connections for a while after any of them died (see ConnHealth).
	Health *ConnHealth
}

// NewPool parses the connection string, opens a pool and pings it, so a
// wrong URL fails at start rather than on the first signal.
func NewPool(ctx context.Context, databaseURL string, pc PoolConfig) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if pc.MaxConns > 0 {
		cfg.MaxConns = pc.MaxConns
	}
	if pc.MinConns > 0 {
		cfg.MinConns = pc.MinConns
	}
	if pc.AppName != "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = pc.AppName
	}
	if pc.AsyncCommit {
		cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	}
	if pc.Tracer != nil {
		cfg.ConnConfig.Tracer = pc.Tracer
	}
	if pc.NoPreparedStatements {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	}
	if pc.Health != nil {
		pc.Health.apply(cfg)
	}
	if len(pc.Prepare) > 0 && !pc.NoPreparedStatements {
		statements := pc.Prepare
		cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
			for _, sql := range statements {
				_, _ = conn.Prepare(ctx, sql, sql)
			}
			return nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", translate(err))
	}
	return pool, nil
}

// Translate maps pgx and Postgres errors onto this package's errors, for
// callers that run their own statements on a pool.
func Translate(err error) error { return translate(err) }

// translate maps pgx and Postgres errors onto this package's errors, keeping
// the original wrapped for logs.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "55P03": // lock_not_available: lock_timeout expired
			return fmt.Errorf("%w: %w", ErrLockTimeout, err)
		case "57014": // query_canceled: statement_timeout, or pg_cancel_backend
			return fmt.Errorf("%w: %w", ErrStatementTimeout, err)
		case "57P01", "57P02", "57P03", "53300": // admin/crash shutdown, cannot connect now, too many connections
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
			// The server ended the session (idle_in_transaction_session_timeout
			// 25P03, idle_session_timeout 57P05, …): its transaction is gone,
			// as with a connection that was reset. Whether pgx meets the
			// FATAL message or the closed socket first is a matter of timing.
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	// Anything else below the SQL layer (refused, reset or closed
	// connections, a closed pool) means nothing was committed.
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
