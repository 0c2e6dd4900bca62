package db

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// suspectWindow is how long after a dead connection every pool pings before
// handing a connection out.
const suspectWindow = 30 * time.Second

// ConnHealth is shared by one process's pools. When Postgres restarts or
// fails over, every open connection is dead, but a pool only learns that
// when it uses one — and a pool that was idle during a short outage hands
// its dead connections to the next signals. Once any connection dies with a
// fatal error, every pool sharing this ConnHealth pings connections before
// handing them out, for suspectWindow, so the dead ones are weeded out
// before a signal uses them.
type ConnHealth struct {
	suspectUntil atomic.Int64
}

// NewConnHealth returns a ConnHealth that trusts its connections.
func NewConnHealth() *ConnHealth { return &ConnHealth{} }

// MarkSuspect starts a window in which every acquired connection is pinged.
func (h *ConnHealth) MarkSuspect() {
	h.suspectUntil.Store(time.Now().Add(suspectWindow).UnixNano())
}

func (h *ConnHealth) suspect() bool { return time.Now().UnixNano() < h.suspectUntil.Load() }

// apply wires h into a pool's configuration.
func (h *ConnHealth) apply(cfg *pgxpool.Config) {
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		// pgx's default pings connections idle for over a second.
		return p.IdleDuration > time.Second || h.suspect()
	}
	cfg.ConnConfig.OnPgError = func(_ *pgconn.PgConn, e *pgconn.PgError) bool {
		if strings.EqualFold(e.Severity, "FATAL") || strings.EqualFold(e.Severity, "PANIC") {
			h.MarkSuspect()
			return false // close this connection, as pgx does by default
		}
		return true
	}
}
