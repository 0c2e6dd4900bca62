package api

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/internal/codes"
)

// sessionCookie names the operator page's session cookie. Its path is / so
// River's UI under /admin/river sees it too; the JSON /admin API ignores it.
const sessionCookie = "hoox_session"

// csrfField is the form field, and csrfHeader the header for scripts, that
// carry the session's CSRF token.
const (
	csrfField  = "csrf"
	csrfHeader = "X-CSRF-Token"
)

// maxUIForm bounds the page's form bodies: a few short fields.
const maxUIForm = 16 << 10

const ctxSession = "hoox.ui.session"

// sessionOf is the request's session, once requireSession found one.
func sessionOf(c echo.Context) *db.UISession {
	s, _ := c.Get(ctxSession).(*db.UISession)
	return s
}

// randomToken is 32 random bytes, URL-safe.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// sessionHash is what the database stores for a cookie's token: SHA-256
// over the token and the admin token. A database read yields nothing to
// replay, and changing HOOX_ADMIN_TOKEN logs every browser out, as an
// operator rotating a leaked token expects.
func (u *webUI) sessionHash(token string) []byte {
	h := sha256.New()
	h.Write([]byte("hoox ui session\x00"))
	h.Write([]byte(u.s.cfg.AdminToken))
	h.Write([]byte{0})
	h.Write([]byte(token))
	return h.Sum(nil)
}

// session finds the request's live session, or nil. touch extends it.
func (u *webUI) session(c echo.Context, touch bool) (*db.UISession, error) {
	if u.s.cfg.AdminToken == "" || u.s.deps.Pool == nil {
		return nil, nil
	}
	ck, err := c.Cookie(sessionCookie)
	if err != nil || ck.Value == "" || len(ck.Value) > 128 {
		return nil, nil
	}
	ctx := c.Request().Context()
	var s db.UISession
	if touch {
		s, err = db.TouchUISession(ctx, u.s.deps.Pool, u.sessionHash(ck.Value), u.idle)
	} else {
		s, err = db.GetUISession(ctx, u.s.deps.Pool, u.sessionHash(ck.Value))
	}
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// requireSession lets a request through only with a live session. A page
// visit without one goes to the login page and comes back after it.
func (u *webUI) requireSession(touch bool) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return u.page(func(c echo.Context) error {
			s, err := u.session(c, touch)
			if err != nil {
				return err
			}
			if s == nil {
				r := c.Request()
				if r.Method == http.MethodGet && touch {
					if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
						return u.bounce(c)
					}
					return c.Redirect(http.StatusSeeOther, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()))
				}
				return problem(codes.Unauthorized, "your session has ended; log in again")
			}
			c.Set(ctxSession, s)
			return next(c)
		})
	}
}

// bounce answers a link followed from another site (a chat message, a
// notification): the SameSite=Strict cookie was not sent with it, though
// the operator may well be logged in. The page reloads the same address
// from this origin, which sends the cookie; with no session that second
// visit goes to the login page as usual, so there is no loop.
func (u *webUI) bounce(c echo.Context) error {
	return u.render(c, http.StatusOK, "bounce", view{Title: "Opening", KillSwitch: &db.KillSwitch{},
		Data: c.Request().URL.RequestURI()})
}

// requireSameOrigin guards every state-changing request of the page: the
// request must come from this server's own page (Origin) and carry the
// session's CSRF token. Either alone would do in today's browsers; both
// together also cover an older browser or a proxy that drops one.
func (u *webUI) requireSameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return u.page(func(c echo.Context) error {
		r := c.Request()
		if err := checkContentEncoding(c); err != nil {
			return err // as the webhook and the admin API refuse it
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, maxUIForm)
		if !u.sameOrigin(r) {
			return problem(codes.Forbidden, "this request did not come from this server's page (Origin does not match); reload the page and try again")
		}
		s := sessionOf(c)
		got := r.Header.Get(csrfHeader)
		if got == "" {
			// The form body only: a token in the URL would land in logs.
			got = r.PostFormValue(csrfField)
		}
		if s == nil || got == "" || !equalSecret(got, s.CSRFToken) {
			return problem(codes.Forbidden, "missing or wrong CSRF token; reload the page and try again")
		}
		return next(c)
	})
}

// fromTrustedProxy reports whether the direct peer is one of the proxies
// whose forwarding headers are believed (the same list as X-Forwarded-For).
func (u *webUI) fromTrustedProxy(r *http.Request) bool {
	if len(u.s.cfg.TrustedProxies) == 0 {
		return false
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return err == nil && u.s.cfg.TrustedProxies.Contains(a)
}

// secure reports whether the browser reached us over TLS, directly or
// through a trusted proxy that says so.
func (u *webUI) secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return u.fromTrustedProxy(r) && strings.EqualFold(strings.TrimSpace(r.Header.Get(echo.HeaderXForwardedProto)), "https")
}

// host is the host the browser asked for: the Host header, or what a
// trusted proxy says it was.
func (u *webUI) host(r *http.Request) string {
	if u.fromTrustedProxy(r) {
		if h := strings.TrimSpace(r.Header.Get("X-Forwarded-Host")); h != "" {
			return h
		}
	}
	return r.Host
}

// sameOrigin checks that a state-changing request was sent by a page of
// this server: Sec-Fetch-Site, when the browser sends it, must say
// same-origin, and Origin (or, without it, Referer) must name this host. A
// request with neither is refused: every browser that can run the page
// sends Origin on a POST.
func (u *webUI) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return false
	}
	origin := r.Header.Get(echo.HeaderOrigin)
	if origin == "" || origin == "null" {
		origin = r.Header.Get("Referer")
	}
	if origin == "" {
		return false
	}
	o, err := url.Parse(origin)
	if err != nil || o.Host == "" || (o.Scheme != "http" && o.Scheme != "https") {
		return false
	}
	if u.secure(r) && o.Scheme != "https" {
		return false
	}
	return strings.EqualFold(o.Host, u.host(r))
}

// loginView is the login page's data.
type loginView struct {
	Next string
	// Disabled is set when no admin token is configured.
	Disabled bool
}

func (u *webUI) loginPage(c echo.Context) error {
	next := safeNext(c.QueryParam("next"))
	s, err := u.session(c, false)
	if err != nil {
		return err
	}
	if s != nil {
		return c.Redirect(http.StatusSeeOther, next)
	}
	v := view{Title: "Log in", Data: loginView{Next: next, Disabled: u.s.cfg.AdminToken == ""}}
	if c.QueryParam("out") != "" {
		v.Notice = "You are logged out."
	}
	if u.s.cfg.AdminToken == "" {
		v.Error = "The web page is off: no admin token is configured. Set HOOX_ADMIN_TOKEN and restart hoox to log in."
		return u.render(c, http.StatusServiceUnavailable, "login", v)
	}
	return u.render(c, http.StatusOK, "login", v)
}

// login checks the admin token and starts a session. Every address gets a
// few tries; after them each wrong token makes it wait longer, and during a
// wait a wrong token is refused as too many. The right token always logs
// in (attemptAdminToken).
func (u *webUI) login(c echo.Context) error {
	r := c.Request()
	if err := checkContentEncoding(c); err != nil {
		return err // as the webhook and the admin API refuse it
	}
	r.Body = http.MaxBytesReader(c.Response(), r.Body, maxUIForm)
	// The form body only (c.FormValue merges the URL's query string): a
	// token in the URL lands in every proxy's access log and the browser's
	// history, so the login never takes it from there.
	next := safeNext(r.PostFormValue("next"))
	lv := loginView{Next: next}
	if u.s.cfg.AdminToken == "" || u.s.deps.Pool == nil {
		lv.Disabled = true
		return u.render(c, http.StatusServiceUnavailable, "login", view{Title: "Log in", Data: lv,
			Error: "The web page is off: no admin token is configured. Set HOOX_ADMIN_TOKEN and restart hoox to log in."})
	}
	// Login needs no CSRF token (there is no session yet), but a foreign
	// page may not log a browser in either.
	if r.Header.Get(echo.HeaderOrigin) != "" && !u.sameOrigin(r) {
		return problem(codes.Forbidden, "this login did not come from this server's page")
	}
	ip := c.RealIP()
	res, err := u.s.attemptAdminToken(c, r.PostFormValue("token"))
	if err != nil {
		return err
	}
	if !res.OK {
		status, msg := http.StatusUnauthorized, "Wrong token."
		if res.Blocked {
			status, msg = http.StatusTooManyRequests, "Too many wrong tokens from your address."
		}
		if res.RetryAfter > 0 {
			secs := int(res.RetryAfter.Round(time.Second) / time.Second)
			msg += fmt.Sprintf(" Wait %d s before the next try.", max(secs, 1))
			c.Response().Header().Set(echo.HeaderRetryAfter, fmt.Sprint(max(secs, 1)))
		}
		u.s.deps.Logger.WarnContext(r.Context(), "ui: login refused", "remote_ip", ip, "failures", res.Failures, "blocked", res.Blocked)
		return u.render(c, status, "login", view{Title: "Log in", Error: msg, Data: lv})
	}
	token, err := randomToken()
	if err != nil {
		return err
	}
	csrf, err := randomToken()
	if err != nil {
		return err
	}
	if _, err := db.CreateUISession(r.Context(), u.s.deps.Pool, db.NewUISession{TokenHash: u.sessionHash(token), CSRFToken: csrf,
		SourceIP: ip, Idle: u.idle}); err != nil {
		return err
	}
	u.s.deps.Logger.InfoContext(r.Context(), "ui: login", "remote_ip", ip)
	c.SetCookie(u.cookie(r, token, 0))
	return c.Redirect(http.StatusSeeOther, next)
}

// attemptAdminToken compares given with the admin token under the guessing
// throttle: the web page's login and every bearer token sent to /admin
// spend one budget per client (see throttleKey), so neither door is a way
// around the other. The right token is compared first and always gets
// through (db.AttemptLogin). Without a pool (tests of the HTTP layer alone) there is no
// shared store to count in, and the token is only compared.
func (s *Server) attemptAdminToken(c echo.Context, given string) (db.LoginResult, error) {
	check := func() bool { return equalSecret(strings.TrimSpace(given), s.cfg.AdminToken) }
	if s.deps.Pool == nil {
		return db.LoginResult{OK: check()}, nil
	}
	return db.AttemptLogin(c.Request().Context(), s.deps.Pool, throttleKey(c.RealIP()), s.cfg.LoginThrottle, check)
}

// throttleKey is whom the guessing throttle counts: an IPv4 address, or
// the /64 of an IPv6 address, since one IPv6 host is routinely given a
// whole /64 and could otherwise start afresh from each of its addresses.
func throttleKey(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String()
	}
	p, err := a.Prefix(64)
	if err != nil {
		return a.String()
	}
	return p.String()
}

// cookie is the session cookie: unreadable by scripts, never sent by a
// request another site starts, and Secure whenever the browser used TLS.
// It has no Max-Age: the server decides when a session ends.
func (u *webUI) cookie(r *http.Request, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: sessionCookie, Value: value, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: u.secure(r), MaxAge: maxAge}
}

// logout ends the session on the server and in the browser.
func (u *webUI) logout(c echo.Context) error {
	ck, err := c.Cookie(sessionCookie)
	if err == nil {
		if err := db.DeleteUISession(c.Request().Context(), u.s.deps.Pool, u.sessionHash(ck.Value)); err != nil {
			return err
		}
	}
	c.SetCookie(u.cookie(c.Request(), "", -1))
	return c.Redirect(http.StatusSeeOther, "/ui/login?out=1")
}
