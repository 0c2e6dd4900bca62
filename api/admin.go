package api

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
)

// Admin serves the /admin routes: the operator's view of traces, orders and
// the audit trail, key release, the kill switch, purge on demand and River's
// UI. Every route sits behind requireAdmin. Fill the fields before passing
// it to New; the zero value of an optional field switches its route off.
type Admin struct {
	// Pool runs the admin queries.
	Pool *pgxpool.Pool
	// River, when set, mounts River's web UI under /admin/river and backs
	// POST /admin/purge, which queues the periodic job's purge (jobs.PurgeArgs)
	// on it; nil answers 503 there.
	River *river.Client[pgx.Tx]
	// Logger receives the River UI's logs; nil discards them.
	Logger *slog.Logger
	// Notifier queues a notification with every kill switch change,
	// through River, in the change's transaction; nil queues none.
	Notifier *jobs.Notifier

	// riverUI is built by routes, once, while New runs and before the server
	// serves, and only read afterwards.
	riverUI *riverui.Handler
	// statementTimeout bounds the routes' statements (Config's
	// AdminStatementTimeout), set by routes as riverUI is.
	statementTimeout time.Duration
}

// db is what the admin routes run their statements on: Pool, with each
// statement bounded by the admin statement timeout, so a slow listing or
// one stuck behind a lock is cancelled by Postgres instead of holding a
// connection for ever. POST /admin/purge only queues its job through
// River; the purge bounds its own work.
func (a *Admin) db() db.Bounded {
	return db.Bounded{Pool: a.Pool, Timeout: a.statementTimeout}
}

// maxAdminBody bounds admin request bodies; they are a few fields.
const maxAdminBody = 16 << 10

// routes declares the admin routes; cfg is the server's, with its
// defaults, and venues the configured accounts (Deps.Venues).
func (a *Admin) routes(g *echo.Group, cfg Config, venues *exchange.Registry) {
	a.statementTimeout = cfg.AdminStatementTimeout
	declared := map[string][]string{}
	add := func(method, path string, h echo.HandlerFunc) {
		g.Add(method, path, h)
		declared[path] = append(declared[path], method)
	}
	add(http.MethodGet, "/traces", a.listTraces)
	// A wildcard, not a :param, so a client key holding '/' (sent escaped
	// as %2F) still names one trace.
	add(http.MethodGet, "/traces/*", a.getTrace)
	add(http.MethodDelete, "/traces/*", a.releaseTrace(cfg.Timing.LockWait))
	add(http.MethodGet, "/orders", a.listOrders)
	add(http.MethodPost, "/purge", a.purge)
	add(http.MethodGet, "/purge/:job_id", a.purgeStatus)
	add(http.MethodGet, "/stats", a.stats)
	add(http.MethodGet, "/kill-switch", a.getKillSwitch)
	add(http.MethodPut, "/kill-switch", a.putKillSwitch)
	add(http.MethodGet, "/ledger", a.listLedger)
	add(http.MethodPut, "/ledger", a.putLedger(venues))
	for path, methods := range declared {
		refuseOtherMethods(g, path, methods)
	}
	a.mountRiverUI(g)
}

// RefusedMethodRoute is the name of the routes refuseOtherMethods adds:
// they only answer 405, and are not operations of the API.
const RefusedMethodRoute = "hoox_method_not_allowed"

// otherMethods are the methods a route that does not take them answers
// 405 (OPTIONS: 204 with Allow).
var otherMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}

// refuseOtherMethods answers every other method on path 405
// method_not_allowed with Allow, behind the group's token check. Without
// it, the catch-all 404 route Echo adds for the group's middleware wins
// over Echo's own 405, and an operator who POSTs the kill switch would be
// told the route does not exist.
func refuseOtherMethods(g *echo.Group, path string, methods []string) {
	allowed := append(slices.Clone(methods), http.MethodOptions)
	slices.Sort(allowed)
	allow := strings.Join(allowed, ", ")
	for _, m := range otherMethods {
		if slices.Contains(methods, m) {
			continue
		}
		h := func(c echo.Context) error {
			c.Response().Header().Set(echo.HeaderAllow, allow)
			if c.Request().Method == http.MethodOptions {
				return c.NoContent(http.StatusNoContent)
			}
			return problem(codes.MethodNotAllowed, fmt.Sprintf("%s is not allowed here; this route takes %s", c.Request().Method, allow))
		}
		g.Add(m, path, h).Name = RefusedMethodRoute
	}
}

// Start starts the River UI's background query cache, stopped when ctx ends.
// Optional: without it the UI runs its count queries on each request.
func (a *Admin) Start(ctx context.Context) error {
	if a.riverUI == nil {
		return nil
	}
	return a.riverUI.Start(ctx)
}

// requireAdmin checks the bearer token in constant time, under the same
// guessing throttle as the web page's login (attemptAdminToken): a wrong
// token counts as a wrong login, and a wrong token from a client that must
// wait gets 429 rate_limited with Retry-After. The right token always
// gets through, so whoever shares the operator's address cannot lock the
// operator (and the kill switch) out. A request
// with no Authorization header guesses nothing and is not counted. A token
// in the query string is never looked at; with no token configured every
// admin route answers 401.
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AdminToken == "" {
			return problem(codes.Unauthorized, "admin is disabled: set HOOX_ADMIN_TOKEN to enable it")
		}
		refused := func(p *Problem) error {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="hoox admin"`)
			return p
		}
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		if auth == "" {
			return refused(problem(codes.Unauthorized, "missing bearer token"))
		}
		// The scheme is case-insensitive (RFC 9110 §11.1): "bearer" is
		// the same scheme.
		scheme, token, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			// Any other scheme, or a bare token, is a wrong token and
			// counted like one; "" never matches a configured token.
			token = ""
		}
		res, err := s.attemptAdminToken(c, token)
		if err != nil {
			return err
		}
		if res.OK {
			return next(c)
		}
		s.deps.Logger.WarnContext(c.Request().Context(), "admin: bearer token refused", "remote_ip", c.RealIP(),
			"failures", res.Failures, "blocked", res.Blocked)
		if res.Blocked {
			return refused(problem(codes.RateLimited, "too many wrong admin tokens from your address; wait before the next try").
				withRetryAfter(res.RetryAfter))
		}
		return refused(problem(codes.Unauthorized, "missing or wrong bearer token").withRetryAfter(res.RetryAfter))
	}
}

// adminJSON writes an admin answer; admin bodies never escape HTML either.
func adminJSON(c echo.Context, status int, v any) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	c.Response().WriteHeader(status)
	return writeJSON(c.Response(), v)
}

// KillSwitchHook returns the hook that queues the kill switch change's
// notification in its transaction, or nil when none is wanted.
func (a *Admin) KillSwitchHook(engaged bool, reason, by string) db.TxHook {
	if a == nil || a.River == nil || !a.Notifier.Enabled(notify.EventKillSwitch) {
		return nil
	}
	msg := notify.Message{Event: notify.EventKillSwitch, Engaged: engaged, By: by, Detail: reason}
	return func(ctx context.Context, tx pgx.Tx) error { return a.Notifier.InsertTx(ctx, a.River, tx, msg) }
}
