package db

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Beginner starts transactions: a *pgxpool.Pool, or a [Bounded] pool.
// Functions that run their own transaction take it, so a caller can bound
// their statements.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// TxBeginner starts transactions with options (isolation, read only): a
// *pgxpool.Pool, or a [Bounded] pool.
type TxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Handle runs single statements and transactions alike: a
// *pgxpool.Pool, or a [Bounded] pool.
type Handle interface {
	DBTX
	Beginner
	TxBeginner
}

// Bounded runs every statement on Pool under Postgres's statement_timeout:
// a statement still running (or waiting for a lock) after Timeout is
// cancelled by the server, its transaction rolled back, and the error is
// [ErrStatementTimeout]. The operator's routes use it, so a listing on a
// huge table or a query stuck behind a lock cannot hold a connection, and
// its backend, for as long as it runs.
//
// The timeout is SET LOCAL inside a transaction, never on the session:
// the connection goes back to the pool, and through a transaction pooler
// to other clients, with its own setting. So every single statement runs
// in a transaction of its own here (BEGIN, the setting, the statement,
// COMMIT): more round trips, which an operator's request can afford and a
// signal's does not take.
type Bounded struct {
	Pool *pgxpool.Pool
	// Timeout bounds each statement; zero leaves the server's setting.
	Timeout time.Duration
}

const setStatementTimeoutSQL = `SELECT set_config('statement_timeout', $1, true)`

// Begin starts a transaction whose statements are bounded by Timeout.
func (b Bounded) Begin(ctx context.Context) (pgx.Tx, error) {
	return b.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx starts a transaction with opts whose statements are bounded by
// Timeout.
func (b Bounded) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	tx, err := b.Pool.BeginTx(ctx, opts)
	if err != nil || b.Timeout <= 0 {
		return tx, err
	}
	ms := max(b.Timeout.Milliseconds(), 1)
	if _, err := tx.Exec(ctx, setStatementTimeoutSQL, strconv.FormatInt(ms, 10)); err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return tx, nil
}

// Snapshot runs fn in one bounded, read-only transaction at REPEATABLE
// READ: every statement fn runs on q reads the same snapshot of the
// database (a page's counts, its kill switch and last purge, read
// together, cannot disagree), each still under Timeout, and costs one
// round trip rather than a transaction of its own.
func (b Bounded) Snapshot(ctx context.Context, fn func(q DBTX) error) error {
	return pgx.BeginTxFunc(ctx, b, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return fn(tx)
	})
}

// Exec runs sql in a bounded transaction of its own.
func (b Bounded) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	var tag pgconn.CommandTag
	err := pgx.BeginFunc(ctx, b, func(tx pgx.Tx) error {
		var err error
		tag, err = tx.Exec(ctx, sql, args...)
		return err
	})
	return tag, err
}

// QueryRow runs sql in a bounded transaction of its own when the row is
// scanned.
func (b Bounded) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return boundedRow{b: b, ctx: ctx, sql: sql, args: args}
}

type boundedRow struct {
	b    Bounded
	ctx  context.Context
	sql  string
	args []any
}

func (r boundedRow) Scan(dest ...any) error {
	return pgx.BeginFunc(r.ctx, r.b, func(tx pgx.Tx) error {
		return tx.QueryRow(r.ctx, r.sql, r.args...).Scan(dest...)
	})
}

// Query runs sql in a bounded transaction that ends when the rows are
// closed: committed after a clean read, else rolled back.
func (b Bounded) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	tx, err := b.Begin(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		_ = tx.Rollback(ctx)
		return nil, err
	}
	return &boundedRows{Rows: rows, ctx: ctx, tx: tx}, nil
}

type boundedRows struct {
	pgx.Rows
	ctx    context.Context
	tx     pgx.Tx
	closed bool
	err    error
}

func (r *boundedRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	if err := r.Rows.Err(); err != nil {
		_ = r.tx.Rollback(r.ctx)
		return
	}
	r.err = r.tx.Commit(r.ctx)
}

func (r *boundedRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

func (r *boundedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

// SendBatch sends b in a bounded transaction that ends when the results
// are closed.
func (b Bounded) SendBatch(ctx context.Context, batch *pgx.Batch) pgx.BatchResults {
	tx, err := b.Begin(ctx)
	if err != nil {
		return failedBatch{err: err}
	}
	return &boundedBatch{BatchResults: tx.SendBatch(ctx, batch), ctx: ctx, tx: tx}
}

type boundedBatch struct {
	pgx.BatchResults
	ctx context.Context
	tx  pgx.Tx
}

func (r *boundedBatch) Close() error {
	if err := r.BatchResults.Close(); err != nil {
		_ = r.tx.Rollback(r.ctx)
		return err
	}
	return r.tx.Commit(r.ctx)
}

// failedBatch answers every read of a batch that could not be sent.
type failedBatch struct{ err error }

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return errRow(f) }
func (f failedBatch) Close() error                     { return f.err }
func (f failedBatch) Tx() pgx.Tx                       { return nil }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// ErrStatementTimeout means Postgres cancelled a statement (SQLSTATE
// 57014): it ran past its statement_timeout ([Bounded]), or an operator
// cancelled it. Its transaction was rolled back.
var ErrStatementTimeout = errors.New("statement cancelled: it ran past its statement timeout")
