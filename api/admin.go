package api

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/riverqueue/river"
	"riverqueue.com/riverui"

	"github.com/hoox/hoox/db"
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
}

// maxAdminBody bounds admin request bodies; they are a few fields.
const maxAdminBody = 16 << 10

// routes declares the admin routes; cfg is the server's, with its
// defaults.
func (a *Admin) routes(g *echo.Group, cfg Config) {
	g.GET("/traces", a.listTraces)
	// A wildcard, not a :param, so a client key holding '/' (sent escaped
	// as %2F) still names one trace.
	g.GET("/traces/*", a.getTrace)
	g.DELETE("/traces/*", a.releaseTrace(cfg.Timing.LockWait))
	g.GET("/orders", a.listOrders)
	g.POST("/purge", a.purge)
	g.GET("/purge/:job_id", a.purgeStatus)
	g.GET("/stats", a.stats)
	g.GET("/kill-switch", a.getKillSwitch)
	g.PUT("/kill-switch", a.putKillSwitch)
	g.GET("/ledger", a.listLedger)
	g.PUT("/ledger", a.putLedger)
	a.mountRiverUI(g)
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
// token counts as a wrong login, and a client that must wait gets 429
// rate_limited with Retry-After, its token not even compared. A request
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
		token, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok {
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
