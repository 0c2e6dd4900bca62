package api

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hoox/hoox/api/openapi"
	"github.com/hoox/hoox/internal/codes"
)

// routes is the one place every route is declared.
func (s *Server) routes() {
	s.middleware(s.deps.Registry)
	e := s.echo
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.deps.Registry, promhttp.HandlerOpts{Registry: s.deps.Registry})))
	e.POST("/webhook", s.webhook)
	e.GET(openapi.Path, s.openapiDocument)

	// The operator's web page (/ui/, and / redirecting to it). River's UI
	// under /admin also accepts its session; the rest of /admin only ever
	// the bearer token (see riverSessionOr).
	ui := newWebUI(s)
	ui.routes(e)
	admin := e.Group("/admin", ui.riverSessionOr(s.requireAdmin))
	if a := s.deps.Admin; a != nil {
		a.routes(admin, s.cfg, s.deps.Venues)
	} else {
		admin.Any("/*", func(echo.Context) error { return problem(codes.Unauthorized, "admin is not available") })
	}
	s.routeSet = make(map[string]bool)
	for _, r := range e.Routes() {
		s.routeSet[r.Path] = true
	}
}

// RegisterRuntimeMetrics adds the Go runtime and process collectors to reg.
func RegisterRuntimeMetrics(reg prometheus.Registerer) {
	reg.MustRegister(prometheusGoCollector(), prometheusProcessCollector())
}
