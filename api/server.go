// Package api is hoox's HTTP face: the Echo server, its routes, the webhook
// and admin handlers, middleware, and the one place errors become
// problem+json. It parses and answers; the exactly-once work is the
// gateway's.
package api

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/gateway"
)

// Executor is what the webhook needs of the core: execute one authenticated,
// parsed signal exactly once, answering refusals as *gateway.Error.
// *gateway.Service is the one implementation; the api tests use a fake, so
// the handler's guards are tested without a database.
type Executor interface {
	Execute(ctx context.Context, in gateway.Input) (*gateway.Outcome, error)
}

// Deps are the server's collaborators.
type Deps struct {
	// Gateway executes signals; nil refuses every signal as unavailable.
	Gateway Executor
	Pool    *pgxpool.Pool
	// Ready reports nil when the database answers and migrations are
	// current.
	Ready    func(ctx context.Context) error
	Logger   *slog.Logger
	Registry *prometheus.Registry
	// Stages, when set, times the webhook's own stages (gateway.StageDecode
	// and gateway.StageAnswer) next to the gateway's.
	Stages *gateway.Metrics
	// Admin serves the /admin routes; nil leaves them answering 401.
	Admin *Admin
	// Venues lists the configured venues and their last errors on the web
	// page; nil shows none.
	Venues *exchange.Registry
}

// Server is hoox's HTTP server.
type Server struct {
	cfg     Config
	deps    Deps
	echo    *echo.Echo
	limiter *rate.Limiter
	// routeSet holds every declared route template, for the request
	// metric's route label. Filled by routes, read-only once New returns.
	routeSet map[string]bool
}

// New builds the server and its routes.
func New(cfg Config, deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
	}
	cfg = cfg.WithDefaults()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = errorHandler(deps.Logger)
	e.IPExtractor = ipExtractor(cfg.TrustedProxies)
	s := &Server{cfg: cfg, deps: deps, echo: e}
	if cfg.RateLimit > 0 {
		s.limiter = rate.NewLimiter(rate.Limit(cfg.RateLimit), max(cfg.RateBurst, 1))
	}
	s.routes()
	return s
}

// Handler is the server as an http.Handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.echo }

// Serve accepts connections on l until Shutdown.
func (s *Server) Serve(l net.Listener) error {
	srv := &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 120 * time.Second}
	s.echo.Server = srv
	err := srv.Serve(l)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx ends.
func (s *Server) Shutdown(ctx context.Context) error { return s.echo.Shutdown(ctx) }

func (s *Server) middleware(reg prometheus.Registerer) {
	e := s.echo
	e.Use(middleware.RequestID())
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{
		LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
			s.deps.Logger.ErrorContext(c.Request().Context(), "panic", "error", err, "stack", string(stack))
			return err
		},
	}))
	e.Use(middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		LogStatus: true, LogURIPath: true, LogMethod: true, LogLatency: true, LogRemoteIP: true,
		LogRequestID: true, LogRoutePath: true, HandleError: true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if v.Status >= 500 {
				level = slog.LevelError
			}
			// The query string is never logged: it is where a careless
			// client would put a token.
			s.deps.Logger.LogAttrs(c.Request().Context(), level, "request",
				slog.String("method", v.Method), slog.String("path", v.URIPath), slog.Int("status", v.Status),
				slog.Duration("latency", v.Latency), slog.String("remote_ip", v.RemoteIP),
				slog.String("request_id", v.RequestID))
			return nil
		},
	}))
	e.Use(s.requestMetrics(reg))
}

// metricMethods are the methods the request metric names; any other is
// "other", so a client cannot add a time series per made-up method.
var metricMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// metricRoute is the route label of a request: the template of a route
// hoox declared, else "unmatched". Only declared templates pass, whatever
// Echo reports for a request it routed nowhere.
func (s *Server) metricRoute(c echo.Context) string {
	if r := c.Path(); s.routeSet[r] {
		return r
	}
	return "unmatched"
}

// requestMetrics records a request-duration histogram by method, route
// and status. Every label is from a fixed set (see metricMethods and
// metricRoute; the status is one hoox wrote), so requests cannot grow the
// number of series.
func (s *Server) requestMetrics(reg prometheus.Registerer) echo.MiddlewareFunc {
	hist := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hoox_http_request_duration_seconds",
		Help:    "HTTP request duration by route and status.",
		Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
	}, []string{"method", "route", "status"})
	reg.MustRegister(hist)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			status := c.Response().Status
			if err != nil {
				// The error handler has not run yet; its status is the
				// problem the error classifies as.
				p, _ := classify(err)
				status = p.Status
			}
			method := c.Request().Method
			if !metricMethods[method] {
				method = "other"
			}
			hist.WithLabelValues(method, s.metricRoute(c), strconv.Itoa(status)).Observe(time.Since(start).Seconds())
			return err
		}
	}
}

// ipExtractor believes X-Forwarded-For only when the direct peer is a trusted
// proxy, and then takes the rightmost address that is not itself trusted, so
// a sender cannot forge its address by prepending to the header.
func ipExtractor(trusted IPList) echo.IPExtractor {
	return func(r *http.Request) string {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		direct, err := netip.ParseAddr(host)
		if err != nil || len(trusted) == 0 || !trusted.Contains(direct) {
			return host
		}
		var hops []string
		for _, v := range r.Header.Values(echo.HeaderXForwardedFor) {
			hops = append(hops, strings.Split(v, ",")...)
		}
		client := host
		for i := len(hops) - 1; i >= 0; i-- {
			a, ok := parseHop(hops[i])
			if !ok {
				// Not an address: the last hop believed stands. Going on
				// would reach hops the sender wrote itself.
				break
			}
			client = a.String()
			if !trusted.Contains(a) {
				break
			}
		}
		return client
	}
}

// parseHop reads one X-Forwarded-For entry: an address, an address with a
// port (203.0.113.7:4711, [2001:db8::1]:443) as some proxies write it, or
// a bracketed IPv6 address. IPv4-mapped IPv6 addresses are unmapped so
// they match IPv4 lists. Anything else is not a hop.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	if inner, ok := strings.CutPrefix(s, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			if a, err := netip.ParseAddr(inner); err == nil && a.Is6() {
				return a.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}
