package api

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"riverqueue.com/riverui"

	"github.com/hoox/hoox/internal/codes"
)

// riverUIPrefix is where River's web UI is mounted. It sits inside the admin
// group: scripts call /admin/river/api/… with the bearer token, and a
// browser opens it on the web page's session (see riverSessionOr). No
// query-string token is accepted, so the token never lands in logs or
// browser history.
const riverUIPrefix = "/admin/river"

// riverSessionOr guards the /admin group: River's UI, and only it, also
// accepts the web page's session cookie, so an operator logged in at /ui/
// can open it. Everything else under /admin keeps accepting only the bearer
// token, so a page on another site can never drive the JSON API with a
// browser's cookie. River's own script cannot send the page's CSRF token,
// so its state-changing calls (retry, cancel) made on the cookie must come
// from this server's origin; the cookie is SameSite=Strict besides.
func (u *webUI) riverSessionOr(bearer echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withBearer := bearer(next)
		return func(c echo.Context) error {
			// c.Path is the matched route, so only requests Echo routed to
			// River's handler get here, whatever the raw path says.
			route := c.Path()
			r := c.Request()
			if (route != riverUIPrefix && route != riverUIPrefix+"/*") || r.Header.Get(echo.HeaderAuthorization) != "" {
				return withBearer(c)
			}
			// River's pages never in a frame: a page that framed them
			// would click River's own buttons, whose calls come from this
			// origin and pass sameOrigin (docs/UI.md: no framing).
			h := c.Response().Header()
			h.Set("X-Frame-Options", "DENY")
			h.Set("Content-Security-Policy", "frame-ancestors 'none'")
			navigation := r.Method == http.MethodGet && strings.Contains(r.Header.Get(echo.HeaderAccept), "text/html")
			s, err := u.session(c, navigation)
			if err != nil {
				return err
			}
			if s == nil {
				if navigation && u.s.cfg.AdminToken != "" {
					return c.Redirect(http.StatusSeeOther, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()))
				}
				return withBearer(c)
			}
			switch r.Method {
			case http.MethodGet, http.MethodHead, http.MethodOptions:
			default:
				if !u.sameOrigin(r) {
					return problem(codes.Forbidden, "a change through River's UI on the web session must come from this server's page")
				}
			}
			return next(c)
		}
	}
}

// mountRiverUI serves River's UI (jobs, queues, retries) when a River client
// was given.
func (a *Admin) mountRiverUI(g *echo.Group) {
	if a.River == nil {
		return
	}
	logger := a.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h, err := riverui.NewHandler(&riverui.HandlerOpts{
		Endpoints: riverui.NewEndpoints(a.River, nil),
		Logger:    logger,
		Prefix:    riverUIPrefix,
	})
	if err != nil {
		// Only a broken build of riverui (its embedded frontend missing)
		// gets here; the rest of the admin API must still work.
		logger.Error("river ui unavailable", "error", err)
		unavailable := func(echo.Context) error {
			return problem(codes.Unavailable, "River's UI could not be built; see the server log")
		}
		g.Any("/river", unavailable)
		g.Any("/river/*", unavailable)
		return
	}
	a.riverUI = h
	// River's API decodes its JSON bodies (cancel, retry, delete) as
	// they come: a body in a content coding is refused as the webhook
	// and hoox's own admin routes refuse it, before River reads it.
	serve := echo.WrapHandler(h)
	river := func(c echo.Context) error {
		if err := checkContentEncoding(c); err != nil {
			return err
		}
		return serve(c)
	}
	g.Any("/river", river)
	g.Any("/river/*", river)
}
