package app

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/db"
)

// checkReplication refuses to start hoox on a primary that streams to
// standbys asynchronously (synchronous_standby_names empty), unless allow:
// a failover to such a standby can lose commits hoox already acknowledged —
// a claim, an intent, an order — and a resend of a lost signal then
// executes again, a second order on a venue that accepts a reused client
// order ID (Binance, once the first has filled). Storage-level replication
// (RDS Multi-AZ, Aurora, Cloud SQL HA) shows no standbys here and passes.
// docs/FAILOVER.md has the drill and the managed offerings.
func checkReplication(ctx context.Context, pool *pgxpool.Pool, allow bool, logger *slog.Logger) error {
	r, err := db.ReadReplication(ctx, pool)
	if err != nil {
		return err
	}
	if !r.Async() {
		return nil
	}
	if !allow {
		return fmt.Errorf("the database streams to %d standby(s) asynchronously (synchronous_standby_names is empty): "+
			"a failover to one can lose signals hoox already answered, and their resends would execute again; "+
			"set synchronous_standby_names, or start with HOOX_ALLOW_ASYNC_REPLICATION=true if no standby is a failover target "+
			"(docs/FAILOVER.md)", r.Standbys)
	}
	logger.WarnContext(ctx, "asynchronous replication allowed: a failover to a standby can lose acknowledged signals",
		slog.Int64("standbys", r.Standbys))
	return nil
}
