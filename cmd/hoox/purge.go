package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hoox/hoox/db"
)

// runPurge is `hoox purge`: one purge now, with the same code and settings
// (HOOX_PURGE_BATCH, HOOX_AUDIT_RETENTION) as the periodic job, for an
// operator who wants the space back or runs it from cron instead of River.
func runPurge(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, rest, err := parseConfig("purge", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("hoox purge takes no arguments, got %q", rest)
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set: hoox purge needs a Postgres connection string")
	}
	pool, err := db.NewPool(ctx, cfg.DatabaseURL, db.PoolConfig{MaxConns: 2, AppName: "hoox-purge"})
	if err != nil {
		return err
	}
	defer pool.Close()
	res, err := db.Purge(ctx, pool, db.PurgeParams{Batch: cfg.Jobs.PurgeBatch, AuditRetention: cfg.Jobs.AuditRetention, Actor: "hoox purge"})
	if err != nil {
		return fmt.Errorf("%w (purged %d trace IDs and %d audit events before the error)", err, res.Traces, res.Events)
	}
	fmt.Fprintf(stdout, "purged %d trace IDs and %d audit events\n", res.Traces, res.Events)
	return nil
}
