package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// healthz answers while the process is alive; it touches nothing else.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when the database answers and the schema is
// current, so a load balancer stops sending signals that would get 503.
func (s *Server) readyz(c echo.Context) error {
	if s.deps.Ready == nil {
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.deps.Ready(ctx); err != nil {
		return problem("unavailable", "not ready: "+err.Error()).withRetryAfter(5 * time.Second)
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}

func prometheusGoCollector() prometheus.Collector { return collectors.NewGoCollector() }

func prometheusProcessCollector() prometheus.Collector {
	return collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})
}
