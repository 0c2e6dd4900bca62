package app

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/paper"
)

// PoolsConfig sizes the three pools a hoox process opens.
type PoolsConfig struct {
	DatabaseURL string
	// MaxConns is HOOX_DB_MAX_CONNS (see Budget).
	MaxConns int
	// MinConns is HOOX_DB_MIN_CONNS: connections each pool keeps open (and
	// prepared) even when idle, so a burst does not wait for new ones.
	MinConns int
	// TxPooler says DatabaseURL is a transaction-pooling PgBouncer.
	TxPooler bool
	// Tracer, when set, returns the query tracer of the named pool
	// ("claims", "markers", "paper"): the benchmarks count round trips
	// through the very pools hoox runs on.
	Tracer func(pool string) pgx.QueryTracer
}

// Pools are the claim, attempt-marker (intent) and paper venue pools. The
// venue and the markers get pools of their own: a request holding a claim
// connection must never wait for a second connection from the same pool.
type Pools struct {
	Claims  *pgxpool.Pool
	Markers *pgxpool.Pool
	Paper   *pgxpool.Pool
}

// OpenPools opens and pings the three pools, sized by Budget. One health
// signal serves the three: after a Postgres restart, the first dead
// connection any of them meets makes all of them check theirs before a
// signal uses one.
func OpenPools(ctx context.Context, c PoolsConfig) (_ *Pools, err error) {
	p := &Pools{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	claims, markers, venue := Budget(c.MaxConns, c.TxPooler)
	health := db.NewConnHealth()
	for _, spec := range []struct {
		name string
		dst  **pgxpool.Pool
		cfg  db.PoolConfig
	}{
		{"claims", &p.Claims, db.PoolConfig{MaxConns: claims, AppName: "hoox", Prepare: db.ClaimStatements()}},
		{"paper", &p.Paper, paper.PoolConfig(venue)},
		{"markers", &p.Markers, db.PoolConfig{MaxConns: markers, AppName: "hoox-markers", Prepare: db.IntentStatements()}},
	} {
		pc := spec.cfg
		pc.Health, pc.NoPreparedStatements = health, c.TxPooler
		pc.MinConns = min(int32(c.MinConns), pc.MaxConns)
		if c.TxPooler {
			// A pooler refuses (or drops) session settings sent at
			// startup; the venue's fills then commit synchronously.
			pc.AsyncCommit = false
		}
		if c.Tracer != nil {
			pc.Tracer = c.Tracer(spec.name)
		}
		if *spec.dst, err = db.NewPool(ctx, c.DatabaseURL, pc); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Close closes every pool that was opened.
func (p *Pools) Close() {
	for _, pool := range []*pgxpool.Pool{p.Markers, p.Paper, p.Claims} {
		if pool != nil {
			pool.Close()
		}
	}
}

// Budget sizes the claim, intent (marker) and paper venue pools from
// HOOX_DB_MAX_CONNS. Connected to Postgres directly each gets n: they are
// separate so a claim holding a connection never waits on its own pool.
// Through a transaction-pooling PgBouncer the three share the pooler's
// server connections, and a claim holds one across the venue call while it
// waits for an intent's: if claims alone could take every server
// connection, each would wait for one that never frees. There n is hoox's
// whole budget, split so the pools together never exceed it: with the
// budgets of all replicas within PgBouncer's pool size, no request ever
// queues at the pooler.
func Budget(n int, pooler bool) (claims, markers, venue int32) {
	if !pooler {
		return int32(n), int32(n), int32(n)
	}
	side := max(n/4, 1)
	return int32(n - 2*side), int32(side), int32(side)
}
