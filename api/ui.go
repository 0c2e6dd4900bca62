package api

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
)

// uiFS holds the operator page's templates and its few static files. They
// are embedded so the binary serves the page with no build step and no CDN.
//
//go:embed ui
var uiFS embed.FS

// uiPages are the templates rendered inside layout.html.
var uiPages = []string{"login", "traces", "trace", "orders", "stats", "venues", "killswitch", "error", "bounce"}

// webUI serves /ui/: the operator's page. It reads through the same db
// functions as the /admin API and changes state through the same calls, so
// the page and the API can never disagree.
type webUI struct {
	s      *Server
	idle   time.Duration
	pages  map[string]*template.Template
	static http.Handler
}

func newWebUI(s *Server) *webUI {
	// s.cfg has its defaults (New): the idle time, and the login throttle
	// attemptAdminToken reads, are the Config's, never a second default.
	u := &webUI{s: s, idle: s.cfg.SessionIdle, pages: map[string]*template.Template{}}
	funcs := template.FuncMap{
		"when":     formatTime,
		"traceURL": traceURL,
		"str":      derefString,
		"json":     prettyJSON,
		"mul100":   func(f float64) float64 { return f * 100 },
		"seconds":  formatSeconds,
		// attachedAny reports whether any order carries an attached exit,
		// so the trace page shows the table only then.
		"attachedAny": func(orders []db.OrderRow) bool {
			for _, o := range orders {
				if len(o.Attached()) > 0 {
					return true
				}
			}
			return false
		},
	}
	for _, p := range uiPages {
		// A template error is a bug in the embedded files, caught by every
		// test that builds a server.
		u.pages[p] = template.Must(template.New(p).Funcs(funcs).ParseFS(uiFS, "ui/layout.html", "ui/filters.html", "ui/"+p+".html"))
	}
	static, err := fs.Sub(uiFS, "ui/static")
	if err != nil {
		panic(fmt.Sprintf("embedded ui/static: %v", err))
	}
	u.static = http.StripPrefix("/ui/static/", http.FileServerFS(static))
	return u
}

// db is what the page's reads and changes run on: Deps.Pool with each
// statement bounded by the admin statement timeout, as the admin API's
// are (Admin.db), so a listing stuck behind a lock is cancelled by
// Postgres rather than holding a connection for as long as it waits.
// The login and session checks stay on the pool: a key lookup each.
func (u *webUI) db() db.Bounded {
	return db.Bounded{Pool: u.s.deps.Pool, Timeout: u.s.cfg.AdminStatementTimeout}
}

// routes declares the page's routes; routes.go calls it.
func (u *webUI) routes(e *echo.Echo) {
	toUI := func(c echo.Context) error { return c.Redirect(http.StatusFound, "/ui/") }
	e.GET("/", toUI)
	e.GET("/ui", toUI)
	e.GET("/ui/static/*", u.serveStatic, u.headers)
	e.GET("/ui/login", u.page(u.loginPage), u.headers)
	e.POST("/ui/login", u.page(u.login), u.headers)

	// Pages: a visit counts as use and extends the session.
	page := []echo.MiddlewareFunc{u.headers, u.requireSession(true)}
	e.GET("/ui/", u.page(u.tracesPage), page...)
	e.GET("/ui/trace/*", u.page(u.tracePage), page...)
	e.GET("/ui/orders", u.page(u.ordersPage), page...)
	e.GET("/ui/stats", u.page(u.statsPage), page...)
	e.GET("/ui/venues", u.page(u.venuesPage), page...)
	e.GET("/ui/kill-switch", u.page(u.killSwitchPage), page...)

	// Live parts: polled by the page's script, they do not extend the
	// session, so a tab left open still logs out after the idle time.
	live := []echo.MiddlewareFunc{u.headers, u.requireSession(false)}
	e.GET("/ui/traces/rows", u.page(u.traceRows), live...)
	e.GET("/ui/stats.json", u.page(u.statsJSON), live...)

	// Every change checks the session's CSRF token and the Origin.
	change := []echo.MiddlewareFunc{u.headers, u.requireSession(true), u.requireSameOrigin}
	e.POST("/ui/logout", u.page(u.logout), change...)
	e.POST("/ui/release", u.page(u.release), change...)
	e.POST("/ui/kill-switch", u.page(u.setKillSwitch), change...)
}

func (u *webUI) serveStatic(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderCacheControl, "public, max-age=3600")
	u.static.ServeHTTP(c.Response(), c.Request())
	return nil
}

// headers keeps the page from being framed, sniffed or cached, and limits
// it to its own scripts and styles: no inline script runs, so an HTML
// injection cannot become script.
func (u *webUI) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set(echo.HeaderCacheControl, "no-store")
		return next(c)
	}
}

// view is what every page template receives.
type view struct {
	Title string
	// Nav names the current page for the menu.
	Nav string
	// CSRF is the session's token for forms; empty when logged out.
	CSRF string
	// RiverUI shows the link to River's UI when it is mounted.
	RiverUI bool
	// KillSwitch is shown as a banner on every page while engaged.
	KillSwitch *db.KillSwitch
	// Notice and Error are one-line messages above the content.
	Notice string
	Error  string
	Data   any
}

// render writes a page. The body is rendered into a buffer first, so a
// template error becomes a clean error page rather than half a page.
func (u *webUI) render(c echo.Context, status int, name string, v view) error {
	t, ok := u.pages[name]
	if !ok {
		return fmt.Errorf("render: no page %q", name)
	}
	if s := sessionOf(c); s != nil {
		v.CSRF = s.CSRFToken
		v.RiverUI = u.s.deps.Admin != nil && u.s.deps.Admin.River != nil
		if u.s.deps.Pool != nil && v.KillSwitch == nil {
			ks, err := db.GetKillSwitch(c.Request().Context(), u.db())
			if err != nil {
				return err
			}
			v.KillSwitch = &ks
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return c.HTMLBlob(status, buf.Bytes())
}

// page turns a handler's error into an HTML error page with the status
// and detail the JSON API would answer (problemFor: one classification for
// both), so an internal cause is logged and never shown.
func (u *webUI) page(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := h(c)
		if err == nil || c.Response().Committed {
			return err
		}
		p := problemFor(c, u.s.deps.Logger, err)
		status, msg := p.Status, p.Detail
		if strings.HasSuffix(c.Path(), ".json") || c.Path() == "/ui/traces/rows" {
			return c.String(status, msg)
		}
		// A broken kill switch read must not hide the error page itself.
		v := view{Title: http.StatusText(status), Error: msg, KillSwitch: &db.KillSwitch{}}
		if rerr := u.render(c, status, "error", v); rerr != nil {
			u.s.deps.Logger.ErrorContext(c.Request().Context(), "ui: render error page", "error", rerr)
			return c.String(status, msg)
		}
		return nil
	}
}

// formatTime shows times in UTC to the second, the same on every screen.
func formatTime(v any) string {
	switch t := v.(type) {
	case time.Time:
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if t == nil {
			return "—"
		}
		return formatTime(*t)
	}
	return fmt.Sprint(v)
}

// traceURL is a trace's page. The ID is escaped as one path segment: a
// client's key may hold '/' or '?'.
func traceURL(id string) string { return "/ui/trace/" + url.PathEscape(id) }

// formatSeconds shows a latency quantile in milliseconds.
func formatSeconds(s *float64) string {
	if s == nil {
		return "—"
	}
	return fmt.Sprintf("%.2f ms", *s*1000)
}

func derefString(s *string) string {
	if s == nil || *s == "" {
		return "—"
	}
	return *s
}

// prettyJSON indents stored JSON for reading; what cannot be indented is
// shown as stored.
func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// safeNext accepts a post-login destination only on this server's own page
// or River's UI, so the login form cannot be used as an open redirect.
func safeNext(next string) string {
	if next == "" || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return "/ui/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/ui/"
	}
	p := path.Clean(u.Path)
	if p == "/ui" || strings.HasPrefix(p, "/ui/") || p == riverUIPrefix || strings.HasPrefix(p, riverUIPrefix+"/") {
		return next
	}
	return "/ui/"
}
