package api

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/hoox/hoox/internal/codes"
)

// The checks /readyz names when one fails.
const (
	// ReadyDatabase: Postgres does not answer.
	ReadyDatabase = "database"
	// ReadyMigrations: the schema is behind this binary's migrations.
	ReadyMigrations = "migrations"
)

// ReadyError is a failed readiness check. /readyz is open to anyone, so its
// answer names only Check; Err (which can hold a database user, name or
// socket path) goes to the log.
type ReadyError struct {
	// Check is ReadyDatabase, ReadyMigrations, or another short name.
	Check string
	Err   error
}

func (e *ReadyError) Error() string { return e.Check + ": " + e.Err.Error() }
func (e *ReadyError) Unwrap() error { return e.Err }

// healthz answers while the process is alive; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when the database answers and the schema is
// current, so a load balancer stops sending signals that would get 503.
// Deps.Ready says which check failed with a *ReadyError; any other error is
// the "unknown" check.
func (s *Server) readyz(c echo.Context) error {
	if s.deps.Ready == nil {
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.deps.Ready(ctx); err != nil {
		check := "unknown"
		if re := (*ReadyError)(nil); errors.As(err, &re) && re.Check != "" {
			check = re.Check
		}
		s.deps.Logger.WarnContext(ctx, "not ready", "check", check, "error", err)
		return problem(codes.Unavailable, "not ready: the "+check+" check failed").withRetryAfter(5 * time.Second)
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func prometheusGoCollector() prometheus.Collector { return collectors.NewGoCollector() }

func prometheusProcessCollector() prometheus.Collector {
	return collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
}
