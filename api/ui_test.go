package api_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testfactory"
	"github.com/hoox/hoox/internal/timing"
)

// uiBundle is one test's whole server, web page included, on its own
// database.
type uiBundle struct {
	dsn     string
	pool    *pgxpool.Pool
	venues  *exchange.Registry
	handler http.Handler
	cfg     api.Config
	deps    api.Deps
}

type uiOpts struct {
	adminToken string
	throttle   db.LoginThrottle
	trusted    string
	idle       time.Duration // SessionIdle (HOOX_UI_SESSION_IDLE); zero: the default
	lockWait   time.Duration
	// paper2 adds a named paper account "paper2" beside paper.
	paper2 bool
	// statementTimeout is AdminStatementTimeout; zero: the default.
	statementTimeout time.Duration
}

func setupUI(t *testing.T, o uiOpts) *uiBundle {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dsn)
	venue := paper.New(paper.Config{Pool: pgtest.OpenPool(t, dsn)})
	venues := exchange.NewRegistry(map[string]exchange.Venue{"paper": venue})
	if o.paper2 {
		venues = exchange.NewRegistryOf(exchange.Entry{Name: "paper", Live: venue},
			exchange.Entry{Name: "paper2", Venue: "paper", Live: paper.New(paper.Config{Pool: pgtest.OpenPool(t, dsn)})})
	}
	reg := prometheus.NewRegistry()
	gw := gateway.New(gateway.Config{DedupWindow: time.Minute, Timing: timing.Config{TraceTTL: 24 * time.Hour, LockWait: 2 * time.Second, VenueTimeout: 5 * time.Second}},
		gateway.Deps{Pool: pool, MarkerPool: pgtest.OpenPool(t, dsn), Venues: venues, Metrics: gateway.NewMetrics(reg)})
	t.Cleanup(gw.Close)
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	trusted, err := api.ParseIPList(o.trusted)
	require.NoError(t, err)
	if o.throttle == (db.LoginThrottle{}) {
		o.throttle = db.LoginThrottle{FreeTries: 3, Delay: time.Hour}
	}
	cfg := api.Config{AdminToken: o.adminToken, WebhookSecret: webhookSecret, TrustedProxies: trusted, LoginThrottle: o.throttle,
		SessionIdle: o.idle, Timing: timing.Config{LockWait: o.lockWait}, AdminStatementTimeout: o.statementTimeout}
	deps := api.Deps{Gateway: gw, Pool: pool, Registry: reg, Venues: venues, Admin: &api.Admin{Pool: pool, River: rc}}
	return &uiBundle{dsn: dsn, pool: pool, venues: venues, handler: api.New(cfg, deps).Handler(), cfg: cfg, deps: deps}
}

// browser is a cookie jar and CSRF token over one handler, sending what a
// browser on the page would send.
type browser struct {
	t       *testing.T
	h       http.Handler
	cookie  string
	csrf    string
	origin  string
	remote  string
	lastSet []*http.Cookie
}

func newBrowser(t *testing.T, h http.Handler) *browser {
	return &browser{t: t, h: h, origin: "http://example.com", remote: "192.0.2.1:1234"}
}

func (b *browser) send(req *http.Request) response {
	b.t.Helper()
	req.RemoteAddr = b.remote
	if b.cookie != "" {
		req.AddCookie(&http.Cookie{Name: "hoox_session", Value: b.cookie})
	}
	rec := httptest.NewRecorder()
	contract(b.t, b.h).ServeHTTP(rec, req)
	b.lastSet = rec.Result().Cookies()
	for _, c := range b.lastSet {
		if c.Name == "hoox_session" {
			b.cookie = c.Value
		}
	}
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

func (b *browser) get(path string) response {
	b.t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Accept", "text/html")
	return b.send(req)
}

// post sends a form as the page would: with Origin and, unless the form
// says otherwise, the session's CSRF token.
func (b *browser) post(path string, form url.Values, header http.Header) response {
	b.t.Helper()
	if _, ok := form["csrf"]; !ok && b.csrf != "" {
		form.Set("csrf", b.csrf)
	}
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	return b.send(req)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// login logs in with the right token and picks up the CSRF token.
func (b *browser) login(token string) {
	b.t.Helper()
	res := b.post("/ui/login", url.Values{"token": {token}}, nil)
	require.Equal(b.t, http.StatusSeeOther, res.Status, string(res.Body))
	require.NotEmpty(b.t, b.cookie)
	page := b.get("/ui/")
	require.Equal(b.t, http.StatusOK, page.Status, string(page.Body))
	m := csrfRE.FindSubmatch(page.Body)
	require.NotNil(b.t, m, "the page carries a CSRF token")
	b.csrf = string(m[1])
}

func (b *browser) sessionCookie() *http.Cookie {
	for _, c := range b.lastSet {
		if c.Name == "hoox_session" {
			return c
		}
	}
	return nil
}

func sendSignal(t *testing.T, h http.Handler, traceID string) response {
	t.Helper()
	sig := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":%q}`, webhookSecret, traceID)
	return do(t, h, http.MethodPost, "/webhook", "", sig)
}

func TestUIRootAndPagesRedirectToLogin(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)

	res := br.get("/")
	require.Equal(t, http.StatusFound, res.Status)
	require.Equal(t, "/ui/", res.Header.Get("Location"))

	for _, p := range []string{"/ui/", "/ui/orders", "/ui/stats", "/ui/venues", "/ui/kill-switch", "/ui/trace/k:x"} {
		res := br.get(p)
		require.Equal(t, http.StatusSeeOther, res.Status, p)
		require.Equal(t, "/ui/login?next="+url.QueryEscape(p), res.Header.Get("Location"), p)
	}
	// The live parts answer 401 to a script rather than a redirect.
	require.Equal(t, http.StatusUnauthorized, br.get("/ui/traces/rows").Status)
	require.Equal(t, http.StatusUnauthorized, br.get("/ui/stats.json").Status)

	login := br.get("/ui/login")
	require.Equal(t, http.StatusOK, login.Status)
	require.Contains(t, string(login.Body), `type="password"`)
	require.Contains(t, login.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
}

func TestUILoginSaysWhenNoAdminTokenIsConfigured(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{})
	br := newBrowser(t, b.handler)
	res := br.get("/ui/login")
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	require.Contains(t, string(res.Body), "no admin token is configured")
	require.NotContains(t, string(res.Body), `type="password"`)

	res = br.post("/ui/login", url.Values{"token": {""}}, nil)
	require.Equal(t, http.StatusServiceUnavailable, res.Status)
	require.Empty(t, br.cookie)
}

func TestUIWrongTokensAreThrottledPerAddress(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)

	for i, token := range []string{"wrong", adminToken + "x", ""} {
		res := br.post("/ui/login", url.Values{"token": {token}}, nil)
		require.Equal(t, http.StatusUnauthorized, res.Status, "try %d", i)
		require.Contains(t, string(res.Body), "Wrong token.")
		require.Empty(t, br.cookie, "no cookie for a wrong token")
		require.Nil(t, br.sessionCookie())
	}
	// The third wrong try started a wait: a wrong token is now refused as
	// too many.
	res := br.post("/ui/login", url.Values{"token": {"guess"}}, nil)
	require.Equal(t, http.StatusTooManyRequests, res.Status)
	require.Contains(t, string(res.Body), "Too many wrong tokens")
	require.NotEmpty(t, res.Header.Get("Retry-After"))
	require.Empty(t, br.cookie)

	// Another address is not held up.
	other := newBrowser(t, b.handler)
	other.remote = "198.51.100.4:5555"
	require.Equal(t, http.StatusUnauthorized, other.post("/ui/login", url.Values{"token": {"wrong"}}, nil).Status)
	other.login(adminToken)

	// The right token works during the wait: whoever shares the address
	// cannot keep the operator out (fix-adminedge).
	res = br.post("/ui/login", url.Values{"token": {adminToken}}, nil)
	require.Equal(t, http.StatusSeeOther, res.Status, string(res.Body))
	require.NotEmpty(t, br.cookie)
}

func TestUISessionCookieFlags(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken, trusted: "10.0.0.0/8"})
	cases := []struct {
		name   string
		remote string
		tls    bool
		proto  string
		secure bool
	}{
		{"plain http", "192.0.2.1:1", false, "", false},
		{"direct TLS", "192.0.2.1:1", true, "", true},
		{"trusted proxy says https", "10.1.2.3:1", false, "https", true},
		{"untrusted peer says https", "192.0.2.1:1", false, "https", false},
		{"trusted proxy says http", "10.1.2.3:1", false, "http", false},
	}
	for _, tc := range cases {
		req := httptest.NewRequest(http.MethodPost, "/ui/login", strings.NewReader(url.Values{"token": {adminToken}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = tc.remote
		if tc.tls {
			req.TLS = &tls.ConnectionState{}
		}
		if tc.proto != "" {
			req.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		rec := httptest.NewRecorder()
		b.handler.ServeHTTP(rec, req)
		require.Equal(t, http.StatusSeeOther, rec.Code, tc.name)
		require.Equal(t, "/ui/", rec.Header().Get("Location"))
		cookies := rec.Result().Cookies()
		require.Len(t, cookies, 1, tc.name)
		c := cookies[0]
		require.Equal(t, "hoox_session", c.Name)
		require.True(t, c.HttpOnly, tc.name)
		require.Equal(t, http.SameSiteStrictMode, c.SameSite, tc.name)
		require.Equal(t, "/", c.Path)
		require.Equal(t, tc.secure, c.Secure, tc.name)
		require.GreaterOrEqual(t, len(c.Value), 40, "a long random token")
	}
}

func TestUISessionIsStoredHashedAndOutlivesTheProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)

	var hash []byte
	var csrf string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT token_hash, csrf_token FROM ui_sessions").Scan(&hash, &csrf))
	require.Len(t, hash, 32, "a SHA-256")
	require.NotContains(t, string(hash), br.cookie, "the cookie's token is not stored")
	require.NotEqual(t, br.cookie, csrf)
	require.Equal(t, br.csrf, csrf)

	// A second server on the same database (a restart, another replica)
	// accepts the session.
	deps := b.deps
	deps.Registry = prometheus.NewRegistry()
	br.h = api.New(b.cfg, deps).Handler()
	require.Equal(t, http.StatusOK, br.get("/ui/orders").Status)

	// A new admin token logs every browser out.
	rotated := b.cfg
	rotated.AdminToken = adminToken + "-rotated"
	deps.Registry = prometheus.NewRegistry()
	br.h = api.New(rotated, deps).Handler()
	require.Equal(t, http.StatusSeeOther, br.get("/ui/orders").Status)
}

func TestUISessionExpiresWhenIdle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	expiry := func() time.Time {
		var at time.Time
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT expires_at FROM ui_sessions").Scan(&at))
		return at
	}
	first := expiry()
	require.WithinDuration(t, time.Now().Add(8*time.Hour), first, time.Minute, "8 h idle by default")

	// Polling does not keep the session alive; a page visit does.
	require.Equal(t, http.StatusOK, br.get("/ui/traces/rows").Status)
	require.Equal(t, first, expiry())
	require.Eventually(t, func() bool {
		require.Equal(t, http.StatusOK, br.get("/ui/stats").Status)
		return expiry().After(first)
	}, 5*time.Second, 5*time.Millisecond)

	_, err := b.pool.Exec(ctx, "UPDATE ui_sessions SET expires_at = now() - interval '1 second'")
	require.NoError(t, err)
	res := br.get("/ui/")
	require.Equal(t, http.StatusSeeOther, res.Status)
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/ui/login"))
	require.Equal(t, http.StatusUnauthorized, br.get("/ui/traces/rows").Status)
}

// HOOX_UI_SESSION_IDLE is honoured: with 2 minutes set, a session lives 2
// minutes past each page visit, and an operator away for 3 minutes must log
// in again — where at the default 8 h the same absence keeps the session.
func TestUISessionIdleIsTheConfiguredOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	short := setupUI(t, uiOpts{adminToken: adminToken, idle: 2 * time.Minute})
	long := setupUI(t, uiOpts{adminToken: adminToken})
	expiry := func(b *uiBundle) time.Time {
		var at time.Time
		require.NoError(t, b.pool.QueryRow(ctx, "SELECT expires_at FROM ui_sessions").Scan(&at))
		return at
	}
	// away moves the session's last use d into the past, as if the
	// operator had left the page alone that long.
	away := func(b *uiBundle, d time.Duration) {
		_, err := b.pool.Exec(ctx, "UPDATE ui_sessions SET last_seen_at = last_seen_at - $1::bigint * interval '1 millisecond', "+
			"expires_at = expires_at - $1::bigint * interval '1 millisecond'", d.Milliseconds())
		require.NoError(t, err)
	}

	shortBr, longBr := newBrowser(t, short.handler), newBrowser(t, long.handler)
	shortBr.login(adminToken)
	longBr.login(adminToken)
	require.WithinDuration(t, time.Now().Add(2*time.Minute), expiry(short), 30*time.Second, "the login lives the configured idle time")

	// A visit after a minute away renews the configured idle time, not 8 h.
	away(short, time.Minute)
	require.Equal(t, http.StatusOK, shortBr.get("/ui/orders").Status, "a minute away is within the 2 minutes")
	require.WithinDuration(t, time.Now().Add(2*time.Minute), expiry(short), 30*time.Second)

	away(short, 3*time.Minute)
	away(long, 3*time.Minute)
	res := shortBr.get("/ui/orders")
	require.Equal(t, http.StatusSeeOther, res.Status, "3 minutes away outlives a 2 minute session")
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/ui/login"))
	require.Equal(t, http.StatusOK, longBr.get("/ui/orders").Status, "at the default, 3 minutes away keeps the session")
}

// otherToken is tok with its first character changed: a token that is
// wrong, however tok begins.
func otherToken(tok string) string {
	if strings.HasPrefix(tok, "x") {
		return "y" + tok[1:]
	}
	return "x" + tok[1:]
}

func TestUIStateChangesNeedTheCSRFTokenAndOrigin(t *testing.T) {
	t.Parallel()
	b, br := loggedInWithATrace(t, "csrf-target")

	engage := url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"forged"}}
	release := url.Values{"trace_id": {"k:csrf-target"}, "confirm": {"yes"}}
	forged := []struct {
		name   string
		csrf   string
		origin string
		header http.Header
	}{
		{"no CSRF token", "", "http://example.com", nil},
		{"wrong CSRF token", otherToken(br.csrf), "http://example.com", nil},
		{"no Origin or Referer", br.csrf, "", nil},
		{"foreign Origin", br.csrf, "https://evil.example", nil},
		{"null Origin", br.csrf, "null", nil},
		{"same host, other port", br.csrf, "http://example.com:8081", nil},
		{"cross-site fetch", br.csrf, "http://example.com", http.Header{"Sec-Fetch-Site": {"cross-site"}}},
	}
	for _, f := range forged {
		br.origin = f.origin
		for path, form := range map[string]url.Values{"/ui/kill-switch": engage, "/ui/release": release, "/ui/logout": {}} {
			form := cloneValues(form)
			form.Set("csrf", f.csrf)
			res := br.post(path, form, f.header)
			require.Equal(t, http.StatusForbidden, res.Status, "%s: %s", f.name, path)
		}
	}
	changedNothing(t, b, br, "k:csrf-target", "no forged request")

	// Referer stands in for a missing Origin; the header stands in for
	// the form field.
	br.origin = ""
	res := br.post("/ui/kill-switch", cloneValues(engage), http.Header{"Referer": {"http://example.com/ui/kill-switch"}})
	require.Equal(t, http.StatusSeeOther, res.Status, string(res.Body))
	br.origin = "http://example.com"
	form := url.Values{"engaged": {"false"}, "confirm": {"DISENGAGE"}, "csrf": {""}}
	res = br.post("/ui/kill-switch", form, http.Header{"X-Csrf-Token": {br.csrf}})
	require.Equal(t, http.StatusSeeOther, res.Status, string(res.Body))

	// Another session's CSRF token is not this one's.
	other := newBrowser(t, b.handler)
	other.remote = "198.51.100.9:1"
	other.login(adminToken)
	form = cloneValues(engage)
	form.Set("csrf", other.csrf)
	require.Equal(t, http.StatusForbidden, br.post("/ui/kill-switch", form, nil).Status)
}

// The page's forms are read as the webhook and the admin API read a
// body: one labelled with a content coding is refused (415) and changes
// nothing, however valid its session, token and origin (issue 21,
// twentieth round: the admin API's fix had left the page's forms).
func TestUIFormWithAContentEncodingIs415AndChangesNothing(t *testing.T) {
	t.Parallel()
	b, br := loggedInWithATrace(t, "encoded-target")
	gzip := http.Header{"Content-Encoding": {"gzip"}}

	forms := map[string]url.Values{
		"/ui/kill-switch": {"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"labelled"}},
		"/ui/release":     {"trace_id": {"k:encoded-target"}, "confirm": {"yes"}},
		"/ui/logout":      {},
	}
	for path, form := range forms {
		form := cloneValues(form)
		form.Set("csrf", br.csrf)
		res := br.post(path, form, gzip)
		require.Equal(t, http.StatusUnsupportedMediaType, res.Status, "%s: %s", path, res.Body)
	}
	changedNothing(t, b, br, "k:encoded-target", "the labelled form")

	// A login labelled gzip is refused too, and opens no session.
	other := newBrowser(t, b.handler)
	res := other.post("/ui/login", url.Values{"token": {adminToken}}, gzip)
	require.Equal(t, http.StatusUnsupportedMediaType, res.Status, string(res.Body))
	require.NotEqual(t, http.StatusOK, other.get("/ui/").Status, "no session was opened")
}

// loggedInWithATrace starts the page with an admin token, logs a browser
// in and sends one signal, whose trace is k:<key>.
func loggedInWithATrace(t *testing.T, key string) (*uiBundle, *browser) {
	t.Helper()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, key).Status)
	return b, br
}

// changedNothing checks that what (refused requests to the page's forms)
// left the kill switch released, trace held and br logged in.
func changedNothing(t *testing.T, b *uiBundle, br *browser, trace, what string) {
	t.Helper()
	ctx := context.Background()
	ks, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged, "%s engaged the kill switch", what)
	d, err := db.GetTrace(ctx, b.pool, trace)
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "%s released the trace", what)
	require.Equal(t, http.StatusOK, br.get("/ui/").Status, "%s logged out", what)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func TestUICookieNeverOpensTheAdminAPIOnlyRiversUI(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)

	// Without a session River's UI sends a browser to the login page and
	// comes back after it.
	res := br.get("/admin/river/")
	require.Equal(t, http.StatusSeeOther, res.Status)
	require.Equal(t, "/ui/login?next=%2Fadmin%2Friver%2F", res.Header.Get("Location"))
	br.login(adminToken)
	res = br.post("/ui/login", url.Values{"token": {adminToken}, "next": {"/admin/river/"}}, nil)
	require.Equal(t, "/admin/river/", res.Header.Get("Location"))

	for _, r := range []struct{ method, path, body string }{
		{http.MethodGet, "/admin/traces", ""},
		{http.MethodGet, "/admin/orders", ""},
		{http.MethodGet, "/admin/stats", ""},
		{http.MethodGet, "/admin/kill-switch", ""},
		{http.MethodPut, "/admin/kill-switch", `{"engaged": true}`},
		{http.MethodDelete, "/admin/traces/k:x", ""},
		{http.MethodPost, "/admin/purge", ""},
	} {
		req := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		req.Header.Set("Origin", "http://example.com")
		req.Header.Set("X-CSRF-Token", br.csrf)
		res := br.send(req)
		require.Equal(t, http.StatusUnauthorized, res.Status, "%s %s with only the cookie: %s", r.method, r.path, res.Body)
	}
	ks, err := db.GetKillSwitch(context.Background(), b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged)
	// A path that Echo routes to River's handler is only ever River's.
	for _, p := range []string{"/admin/river/../traces", "/admin/river/%2E%2E/traces"} {
		res := br.get(p)
		require.NotContains(t, string(res.Body), "next_cursor", p)
	}

	require.Equal(t, http.StatusOK, br.get("/admin/river/").Status, "River's UI opens on the session")
	api := httptest.NewRequest(http.MethodGet, "/admin/river/api/jobs?state=available", nil)
	require.Equal(t, http.StatusOK, br.send(api).Status)

	// A change through River's UI on the cookie must come from this origin.
	for _, origin := range []string{"https://evil.example", ""} {
		req := httptest.NewRequest(http.MethodPost, "/admin/river/api/jobs/retry", strings.NewReader(`{"job_ids":["1"]}`))
		req.Header.Set("Content-Type", "application/json")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		require.Equal(t, http.StatusForbidden, br.send(req).Status, "origin %q", origin)
	}
	req := httptest.NewRequest(http.MethodPost, "/admin/river/api/jobs/retry", strings.NewReader(`{"job_ids":["1"]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "http://example.com")
	require.NotEqual(t, http.StatusForbidden, br.send(req).Status)
}

func TestUILoginRedirectStaysOnThisServer(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/admin/traces", "/ui/../admin/stats", "/\\evil.example"} {
		br := newBrowser(t, b.handler)
		res := br.post("/ui/login", url.Values{"token": {adminToken}, "next": {next}}, nil)
		require.Equal(t, http.StatusSeeOther, res.Status)
		require.Equal(t, "/ui/", res.Header.Get("Location"), next)
	}
	br := newBrowser(t, b.handler)
	res := br.post("/ui/login", url.Values{"token": {adminToken}, "next": {"/ui/orders?status=filled"}}, nil)
	require.Equal(t, "/ui/orders?status=filled", res.Header.Get("Location"))
	// A login posted from another site is refused.
	br = newBrowser(t, b.handler)
	br.origin = "https://evil.example"
	require.Equal(t, http.StatusForbidden, br.post("/ui/login", url.Values{"token": {adminToken}}, nil).Status)
	require.Empty(t, br.cookie)
}

func TestUILogoutEndsTheSessionOnTheServer(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	stolen := br.cookie

	res := br.post("/ui/logout", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, res.Status)
	require.Equal(t, "/ui/login?out=1", res.Header.Get("Location"))
	c := br.sessionCookie()
	require.NotNil(t, c)
	require.Less(t, c.MaxAge, 0, "the browser drops the cookie")

	// Even a copy of the cookie no longer works.
	br.cookie = stolen
	require.Equal(t, http.StatusSeeOther, br.get("/ui/").Status)
	require.Contains(t, string(br.get("/ui/login?out=1").Body), "You are logged out.")
}

func TestUITracesListNewestFirstWithFiltersAndLiveRows(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	ab := &adminBundle{pool: b.pool, handler: b.handler}
	now := time.Now()
	ab.insertTrace(t, "k:old", db.TraceRejected, "paper", "ETHUSDT", "live", now.Add(-2*time.Hour), now.Add(time.Hour))
	ab.insertTrace(t, "k:new/with slash", db.TraceDispatched, "paper", "BTCUSDT", "test", now.Add(-time.Minute), now.Add(time.Hour))

	page := string(br.get("/ui/").Body)
	require.Less(t, strings.Index(page, "k:new/with slash"), strings.Index(page, "k:old"), "newest first")
	require.Contains(t, page, `href="/ui/trace/k:new%2Fwith%20slash"`)

	page = string(br.get("/ui/?status=rejected").Body)
	require.Contains(t, page, "k:old")
	require.NotContains(t, page, "k:new/with slash")
	page = string(br.get("/ui/?symbol=btcusdt&exchange=PAPER").Body)
	require.NotContains(t, page, "k:old")
	require.Contains(t, page, "k:new/with slash")
	since := now.Add(-time.Hour).UTC().Format("2006-01-02T15:04")
	page = string(br.get("/ui/?since=" + since).Body)
	require.NotContains(t, page, "k:old")
	res := br.get("/ui/?since=yesterday")
	require.Equal(t, http.StatusBadRequest, res.Status)
	require.Contains(t, string(res.Body), "must be an RFC 3339 time", "the admin API's reader, and its words")

	// The rows the page polls show a signal sent after the page loaded.
	require.NotContains(t, string(br.get("/ui/traces/rows").Body), "k:fresh")
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "fresh").Status)
	rows := br.get("/ui/traces/rows")
	require.Equal(t, http.StatusOK, rows.Status)
	require.True(t, strings.HasPrefix(strings.TrimSpace(string(rows.Body)), `<tr data-id="k:fresh"`), string(rows.Body))
	require.NotContains(t, string(br.get("/ui/traces/rows?status=rejected").Body), "k:fresh", "the filter applies to live rows")

	// The trace's page is linked and shows the trace.
	trace := br.get("/ui/trace/k:new%2Fwith%20slash")
	require.Equal(t, http.StatusOK, trace.Status)
	require.Contains(t, string(trace.Body), "BTCUSDT")
	require.Equal(t, http.StatusNotFound, br.get("/ui/trace/k:nothing").Status)
}

var olderRE = regexp.MustCompile(`<a href="([^"]+)" rel="next">Older`)

// Both listings page the way the admin API does, the filter kept across
// pages: the Older link of a full page leads to the rest.
func TestUIListingsPageWithTheFilter(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	base := time.Now().Add(-time.Hour)
	for i := range 53 {
		at := base.Add(time.Duration(i) * time.Second)
		id := fmt.Sprintf("k:p%02d", i)
		testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: id, Status: db.TraceRejected, ReceivedAt: at})
		testfactory.Order(t, b.pool, testfactory.OrderOpts{TraceID: id, Status: exchange.StatusRejected, CreatedAt: at})
	}
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:other", Status: db.TraceDispatched, ReceivedAt: base})
	testfactory.Order(t, b.pool, testfactory.OrderOpts{TraceID: "k:other", Status: exchange.StatusFilled, CreatedAt: base})

	for _, first := range []string{"/ui/?status=rejected", "/ui/orders?status=rejected"} {
		page := string(br.get(first).Body)
		require.Contains(t, page, "k:p52")
		require.Contains(t, page, "k:p03")
		require.NotContains(t, page, "k:p02", "50 a page")
		m := olderRE.FindStringSubmatch(page)
		require.NotNil(t, m, "a full page links to the next: %s", first)
		next := html.UnescapeString(m[1])
		require.Contains(t, next, "status=rejected", "the filter is kept")

		res := br.get(next)
		require.Equal(t, http.StatusOK, res.Status, next)
		page = string(res.Body)
		for _, id := range []string{"k:p02", "k:p01", "k:p00"} {
			require.Contains(t, page, id, next)
		}
		require.NotContains(t, page, "k:p03", next)
		require.NotContains(t, page, "k:other", "the filter applies on the next page too")
		require.Nil(t, olderRE.FindStringSubmatch(page), "the last page links nowhere")
	}
	require.Equal(t, http.StatusBadRequest, br.get("/ui/orders?cursor=not-a-cursor").Status)
}

func TestUITracePageShowsTheTimelineAndReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	sent := sendSignal(t, b.handler, "shown")
	require.Equal(t, http.StatusOK, sent.Status, string(sent.Body))
	order := sent.json(t)["order"].(map[string]any)

	page := string(br.get("/ui/trace/k:shown").Body)
	for _, want := range []string{"k:shown", "received", "dispatched", order["client_order_id"].(string),
		order["exchange_order_id"].(string), "filled", "192.0.2.1", `action="/ui/release"`} {
		require.Contains(t, page, want)
	}
	if fp, ok := order["fill_price"].(string); ok {
		require.Contains(t, page, fp)
	}
	require.NotContains(t, page, webhookSecret, "the secret is never shown")

	res := br.post("/ui/release", url.Values{"trace_id": {"k:shown"}}, nil)
	require.Equal(t, http.StatusBadRequest, res.Status, "release needs the confirmation")
	require.Contains(t, string(res.Body), "confirmation")
	d, err := db.GetTrace(ctx, b.pool, "k:shown")
	require.NoError(t, err)
	require.NotNil(t, d.Trace)

	res = br.post("/ui/release", url.Values{"trace_id": {"k:shown"}, "confirm": {"yes"}, "reason": {"retry after fix"}}, nil)
	require.Equal(t, http.StatusSeeOther, res.Status, string(res.Body))
	require.Equal(t, "/ui/trace/k:shown?released=1", res.Header.Get("Location"))
	page = string(br.get(res.Header.Get("Location")).Body)
	require.Contains(t, page, "Released: the trace ID is free")
	require.Contains(t, page, "retry after fix")
	require.NotContains(t, page, `action="/ui/release"`, "no release button once released")

	d, err = db.GetTrace(ctx, b.pool, "k:shown")
	require.NoError(t, err)
	require.Nil(t, d.Trace)
	last := d.Events[len(d.Events)-1]
	require.Equal(t, "released", last.Event)
	require.Contains(t, string(last.Detail), `"by": "ui 192.0.2.1"`)

	res = br.post("/ui/release", url.Values{"trace_id": {"k:shown"}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusNotFound, res.Status)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "shown").Status, "the signal executes again")
}

// Where the trace's status or an attempt in flight forbids a release, the
// page offers none, and a release posted anyway (an old tab, a crafted
// form) is refused with 409 and the reason on the trace's page.
func TestUIReleaseIsRefusedWhereTheTraceIsHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken, lockWait: 50 * time.Millisecond})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:unsure", Status: db.TraceReconciling})

	page := br.get("/ui/trace/k:unsure")
	require.Equal(t, http.StatusOK, page.Status)
	require.NotContains(t, string(page.Body), `action="/ui/release"`, "no release button while reconciling")
	require.Contains(t, string(page.Body), `id="no-release"`)

	res := br.post("/ui/release", url.Values{"trace_id": {"k:unsure"}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Contains(t, string(res.Body), "Not released: trace k:unsure is reconciling: its order may exist at the venue")
	require.Contains(t, string(res.Body), `id="trace-status">reconciling<`, "the trace's own page, with the reason")
	d, err := db.GetTrace(ctx, b.pool, "k:unsure")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the trace is kept")
	require.Equal(t, db.TraceReconciling, d.Trace.Status)

	// An attempt in flight (a repeat, the next window's signal) holds the
	// trace's lock past the configured lock wait.
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:busy"})
	tx, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, tx.Rollback(ctx)) }()
	_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", db.LockKeyOf("k:busy"))
	require.NoError(t, err)
	res = br.post("/ui/release", url.Values{"trace_id": {"k:busy"}, "confirm": {"yes"}}, nil)
	require.Equal(t, http.StatusConflict, res.Status, string(res.Body))
	require.Contains(t, string(res.Body), "Not released: trace k:busy: an attempt is still running; retry the release")
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	d, err = db.GetTrace(ctx, b.pool, "k:busy")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "the trace is kept")
}

func TestUIKillSwitchNeedsTheTypedWord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)

	for _, word := range []string{"", "engage", "DISENGAGE", "ENGAGE "} {
		res := br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {word}}, nil)
		require.Equal(t, http.StatusBadRequest, res.Status, word)
		require.Contains(t, string(res.Body), "type ENGAGE exactly")
	}
	ks, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged)

	res := br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"venue outage"}}, nil)
	require.Equal(t, http.StatusSeeOther, res.Status)
	page := string(br.get(res.Header.Get("Location")).Body)
	require.Contains(t, page, "Kill switch engaged")
	require.Contains(t, page, "venue outage")
	require.Contains(t, page, "ui 192.0.2.1")
	require.Contains(t, string(br.get("/ui/orders").Body), `id="halted"`, "every page shows the halt")
	sent := sendSignal(t, b.handler, "halted")
	require.Equal(t, http.StatusServiceUnavailable, sent.Status, "the gateway obeys")

	res = br.post("/ui/kill-switch", url.Values{"engaged": {"false"}, "confirm": {"ENGAGE"}}, nil)
	require.Equal(t, http.StatusBadRequest, res.Status)
	res = br.post("/ui/kill-switch", url.Values{"engaged": {"false"}, "confirm": {"DISENGAGE"}}, nil)
	require.Equal(t, http.StatusSeeOther, res.Status)
	ks, err = db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged)
	require.NotContains(t, string(br.get("/ui/orders").Body), `id="halted"`)
}

func TestUIStatsChartDataAndLatency(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	for i := range 3 {
		require.Equal(t, http.StatusOK, sendSignal(t, b.handler, fmt.Sprintf("stat-%d", i)).Status)
	}
	require.Equal(t, http.StatusConflict, sendSignal(t, b.handler, "stat-0").Status)

	var body map[string]any
	require.Eventually(t, func() bool {
		res := br.get("/ui/stats.json?hours=2")
		require.Equal(t, http.StatusOK, res.Status)
		body = res.json(t)
		return sum(body["series"].(map[string]any)["duplicates"]) == 1
	}, 10*time.Second, 10*time.Millisecond, "the duplicate's audit row commits just after its answer")
	series := body["series"].(map[string]any)
	require.Len(t, series["signals"], 120, "one point a minute")
	require.EqualValues(t, 3, sum(series["signals"]))
	require.EqualValues(t, 0, sum(series["rejections"]))
	claim := body["claim_seconds"].(map[string]any)
	require.EqualValues(t, 4, claim["count"])
	require.NotNil(t, claim["p50"])
	require.NotNil(t, claim["p99"])
	require.LessOrEqual(t, claim["p50"].(float64), claim["p99"].(float64))
	require.EqualValues(t, 3, body["dispatch_seconds"].(map[string]any)["count"])

	page := br.get("/ui/stats")
	require.Equal(t, http.StatusOK, page.Status)
	require.Contains(t, string(page.Body), `data-src="/ui/stats.json?hours=3"`)
	require.Regexp(t, `<td>received</td><td>3</td><td>3</td>`, string(page.Body))
	require.Regexp(t, `<td>Claim</td><td>4</td><td>[0-9.]+ ms</td>`, string(page.Body))
}

func sum(v any) float64 {
	var s float64
	for _, x := range v.([]any) {
		s += x.(float64)
	}
	return s
}

func TestUIVenuesShowModeAndLastError(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	venues := exchange.NewRegistryOf(
		exchange.Entry{Name: "paper"},
		exchange.Entry{Name: "binance", Testnet: true, BaseURL: "https://testnet.binance.example"},
		exchange.Entry{Name: "bybit", BaseURL: "https://api.bybit.example"},
		exchange.Entry{Name: "sub1", Venue: "bybit", BaseURL: "https://api.bybit.example"},
		exchange.Entry{Name: "okx", Test: paper.New(paper.Config{}), BaseURL: "https://www.okx.example"},
	)
	venues.NoteError("bybit", errors.New("invalid api key (code 10003)"), time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	venues.NoteError(venues.KeyName("okx", true), errors.New("api key doesn't exist (code 50119)"), time.Date(2025, 3, 4, 5, 6, 8, 0, time.UTC))
	deps := b.deps
	deps.Venues = venues
	deps.Registry = prometheus.NewRegistry()
	br := newBrowser(t, api.New(b.cfg, deps).Handler())
	br.login(adminToken)

	page := string(br.get("/ui/venues").Body)
	require.Regexp(t, `(?s)<td>binance</td>\s*<td><span class="status s-test">testnet</span>`, page)
	require.Regexp(t, `(?s)<td>bybit</td>\s*<td><span class="status s-live">live</span>.*2025-03-04 05:06:07Z: invalid api key \(code 10003\)`, page)
	require.Regexp(t, `(?s)<td>paper</td>\s*<td>paper</td>\s*<td>simulated</td>`, page)
	require.Regexp(t, `(?s)<td>sub1</td>\s*<td>bybit</td>\s*<td><span class="status s-live">live</span>`, page, "a named account and its venue")
	require.Regexp(t, `(?s)<td>okx</td>\s*<td>okx</td>.*<td>none<br><span class="error-text">testnet key, 2025-03-04 05:06:08Z: api key doesn&#39;t exist \(code 50119\)</span></td>`, page,
		"the testnet key's error is its own, not the live key's")
}

func TestUIOrdersList(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	ab := &adminBundle{pool: b.pool, handler: b.handler}
	ab.insertOrder(t, "k:o1", "BTCUSDT", "rejected", time.Now().Add(-time.Minute))
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "o2").Status)

	page := string(br.get("/ui/orders").Body)
	require.Less(t, strings.Index(page, "k:o2"), strings.Index(page, "k:o1"), "newest first")
	require.Contains(t, page, "12345.678901234567890123", "decimals exact")
	page = string(br.get("/ui/orders?status=rejected").Body)
	require.Contains(t, page, "k:o1")
	require.NotContains(t, page, "k:o2")
	require.Equal(t, http.StatusBadRequest, br.get("/ui/orders?status=bogus").Status)
}

func TestUILinkFromAnotherSiteReloadsFromThisOrigin(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)

	// A SameSite=Strict cookie is not sent on a link followed from a chat
	// message: the page reloads itself from this origin instead of asking
	// a logged-in operator to log in again.
	req := httptest.NewRequest(http.MethodGet, "/ui/trace/k:x%2Fy", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res := br.send(req)
	require.Equal(t, http.StatusOK, res.Status)
	require.Contains(t, string(res.Body), `<meta http-equiv="refresh" content="0;url=/ui/trace/k:x%2Fy">`)

	// The reload comes from this origin; without a session it goes to the
	// login page, so there is no loop.
	req = httptest.NewRequest(http.MethodGet, "/ui/trace/k:x%2Fy", nil)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res = br.send(req)
	require.Equal(t, http.StatusSeeOther, res.Status)
	require.Equal(t, "/ui/login?next="+url.QueryEscape("/ui/trace/k:x%2Fy"), res.Header.Get("Location"))
}

// An unreachable database is 503 with Retry-After on the JSON API and on
// the web page alike, its cause logged and never shown: one classification
// for both.
func TestUnreachableDatabaseIs503OnTheAPIAndThePage(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(context.Background(), "postgres://hoox@127.0.0.1:1/hoox?connect_timeout=1")
	require.NoError(t, err)
	pool.Close()
	h := api.New(api.Config{AdminToken: adminToken, WebhookSecret: webhookSecret},
		api.Deps{Pool: pool, Admin: &api.Admin{Pool: pool}}).Handler()

	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/admin/traces"},
		{http.MethodGet, "/admin/orders"},
		{http.MethodGet, "/admin/traces/k:x"},
		{http.MethodDelete, "/admin/traces/k:x"},
		{http.MethodGet, "/admin/kill-switch"},
	} {
		res := do(t, h, r.method, r.path, adminToken, "")
		require.Equal(t, http.StatusServiceUnavailable, res.Status, "%s %s: %s", r.method, r.path, res.Body)
		p := res.problem(t)
		require.Equal(t, "unavailable", p["code"])
		require.Equal(t, "the database is unavailable; try again shortly", p["detail"])
		require.Equal(t, "5", res.Header.Get("Retry-After"))
	}

	// The page needs the database from the session lookup on.
	br := newBrowser(t, h)
	br.cookie = "a-session-from-before-the-outage"
	for _, path := range []string{"/ui/", "/ui/traces/rows"} {
		res := br.get(path)
		require.Equal(t, http.StatusServiceUnavailable, res.Status, path)
		require.Contains(t, string(res.Body), "the database is unavailable; try again shortly", path)
		require.NotContains(t, string(res.Body), "closed pool", "the cause stays in the log")
		require.Equal(t, "5", res.Header.Get("Retry-After"), path)
	}
}

// A followed order's live state — status, filled quantity, average price,
// fee and when it last changed — shows on the orders page, the trace page
// and the admin API (issue 19).
func TestUIAndAdminShowAFollowedOrdersFillsAndFees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	testfactory.Trace(t, b.pool, testfactory.TraceOpts{ID: "k:followed", Status: db.TraceDispatched})
	o := testfactory.Order(t, b.pool, testfactory.OrderOpts{TraceID: "k:followed", Status: exchange.StatusOpen, OrderType: "limit",
		Quantity: "2", Price: "90"})
	changed, err := db.ApplyOrderUpdate(ctx, b.pool, o.ClientOrderID, db.OrderUpdate{Status: exchange.StatusCancelled,
		FilledQuantity: decimal.RequireFromString("0.75"), AvgPrice: decimal.NewNullDecimal(decimal.RequireFromString("89.9")),
		Fee: decimal.NewNullDecimal(decimal.RequireFromString("0.00075")), FeeAsset: "BTC", CancelledBy: "k:cancel-1"}, nil)
	require.NoError(t, err)
	require.True(t, changed)

	for _, path := range []string{"/ui/orders", "/ui/trace/k:followed"} {
		page := string(br.get(path).Body)
		for _, want := range []string{"s-cancelled", "0.75", "89.9", "0.00075 BTC"} {
			require.Contains(t, page, want, path)
		}
	}
	ab := &adminBundle{pool: b.pool, handler: b.handler}
	get := func(target string) string {
		res := ab.do(t, http.MethodGet, target, "")
		require.Equal(t, http.StatusOK, res.Status, string(res.Body))
		return string(res.Body)
	}
	body := get("/admin/orders?status=cancelled")
	require.Contains(t, body, `"avg_price":"89.9"`)
	require.Contains(t, body, `"fee":"0.00075"`)
	require.Contains(t, body, `"fee_asset":"BTC"`)
	require.Contains(t, body, `"cancelled_by":"k:cancel-1"`)
	require.Contains(t, get("/admin/traces/k:followed"), `"filled_quantity":"0.75"`)
}

// A venue reached through a proxy that takes basic auth in its URL
// (HOOX_<VENUE>_BASE_URL=https://user:password@proxy) shows where it sends
// its requests, never the password: the venues page showed the URL as set.
func TestUIVenuesPageHidesABaseURLsPassword(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	deps := b.deps
	deps.Venues = exchange.NewRegistryOf(
		exchange.Entry{Name: "binance", BaseURL: "https://trader:pr0xy-Passw0rd@proxy.example:8443/binance"},
		exchange.Entry{Name: "bybit", BaseURL: "https://t0ken-only-user@proxy.example"},
	)
	deps.Registry = prometheus.NewRegistry()
	br := newBrowser(t, api.New(b.cfg, deps).Handler())
	br.login(adminToken)

	page := string(br.get("/ui/venues").Body)
	require.NotContains(t, page, "pr0xy-Passw0rd")
	require.NotContains(t, page, "t0ken-only-user", "a user without a password may be the token")
	require.Contains(t, page, "proxy.example:8443/binance", "where the requests go is still shown")
}
