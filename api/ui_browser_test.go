package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
)

// chromiumPaths are where a Chromium is looked for; HOOX_CHROMIUM names
// another.
var chromiumPaths = []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome", "/usr/bin/google-chrome-stable"}

func findChromium() string {
	paths := chromiumPaths
	if p := os.Getenv("HOOX_CHROMIUM"); p != "" {
		paths = append([]string{p}, paths...)
	}
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return ""
}

// startBrowser launches a headless Chromium on a fresh profile. It never
// downloads a browser: without one installed the test is skipped, and
// .ci/run installs one.
func startBrowser(t *testing.T) *rod.Browser {
	t.Helper()
	bin := findChromium()
	if bin == "" {
		t.Skip("no Chromium found (looked at HOOX_CHROMIUM and " + strings.Join(chromiumPaths, ", ") +
			"); install it with `apt-get install -y chromium` (.ci/run does) to run the browser test")
	}
	l := launcher.New().Bin(bin).Headless(true).Leakless(false).
		NoSandbox(os.Geteuid() == 0). // Chromium refuses its sandbox as root
		UserDataDir(t.TempDir()).
		Set("disable-background-networking").Set("disable-component-update").Set("disable-sync").
		Set("no-first-run").Set("disable-gpu").
		// The test server's certificate is self-signed.
		Set("ignore-certificate-errors")
	wsURL, err := l.Launch()
	require.NoError(t, err, "launch %s", bin)
	b := rod.New().ControlURL(wsURL)
	require.NoError(t, b.Connect())
	t.Cleanup(func() {
		_ = b.Close()
		l.Kill()
		l.Cleanup()
	})
	return b
}

// shooter writes screenshots to docs/screenshots when HOOX_UI_SCREENSHOTS
// is set, so the README's pictures are the page as tested.
type shooter struct {
	t   *testing.T
	dir string
}

func newShooter(t *testing.T) shooter {
	if os.Getenv("HOOX_UI_SCREENSHOTS") == "" {
		return shooter{t: t}
	}
	dir := filepath.Join("..", "docs", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return shooter{t: t, dir: dir}
}

func (s shooter) shoot(p *rod.Page, name string) {
	s.t.Helper()
	if s.dir == "" {
		return
	}
	b, err := p.Screenshot(true, &proto.PageCaptureScreenshot{Format: proto.PageCaptureScreenshotFormatPng})
	require.NoError(s.t, err)
	require.NoError(s.t, os.WriteFile(filepath.Join(s.dir, name+".png"), b, 0o644))
}

// TestUIInABrowser drives the page in a real headless Chromium over TLS:
// a wrong then the right token, the traces list, a signal appearing while
// the page is open, a trace's page, the kill switch there and back, River's
// UI on the session, and logout.
func TestUIInABrowser(t *testing.T) {
	t.Parallel()
	browser := startBrowser(t)
	b := setupUI(t, uiOpts{adminToken: adminToken})
	ts := httptest.NewUnstartedServer(b.handler)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	shots := newShooter(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)

	client := ts.Client()
	send := func(id, symbol string) int {
		sig := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":%q,"action":"buy","quantity":"0.01","trace_id":%q}`, webhookSecret, symbol, id)
		res, err := client.Post(ts.URL+"/webhook", "application/json", strings.NewReader(sig))
		require.NoError(t, err)
		require.NoError(t, res.Body.Close())
		return res.StatusCode
	}
	for i, sym := range []string{"BTCUSDT", "ETHUSDT", "SOLUSDT"} {
		require.Equal(t, http.StatusOK, send(fmt.Sprintf("seed-%d", i), sym))
	}
	require.Equal(t, http.StatusConflict, send("seed-0", "BTCUSDT"))

	page := browser.MustPage("").Context(ctx)
	page.MustSetViewport(1280, 860, 1, false)
	path := func() string {
		u, err := url.Parse(page.MustInfo().URL)
		require.NoError(t, err)
		return u.Path
	}
	navigate := func(p string) {
		t.Helper()
		page.MustNavigate(ts.URL + p).MustWaitLoad()
	}
	submit := func(selector string) {
		t.Helper()
		wait := page.MustWaitNavigation()
		page.MustElement(selector).MustClick()
		wait()
		page.MustWaitLoad()
	}
	sessionCookie := func() *proto.NetworkCookie {
		for _, c := range page.MustCookies(ts.URL) {
			if c.Name == "hoox_session" {
				return c
			}
		}
		return nil
	}

	// / leads to the login page.
	navigate("/")
	require.Equal(t, "/ui/login", path())
	shots.shoot(page, "login")

	// A wrong token: an error and no cookie.
	page.MustElement("#token").MustInput("not-the-token")
	submit("#login")
	require.Contains(t, page.MustElement(".error").MustText(), "Wrong token.")
	require.Nil(t, sessionCookie())

	// The right token: the traces list and a cookie scripts cannot read.
	page.MustElement("#token").MustSelectAllText().MustInput(adminToken)
	submit("#login")
	require.Equal(t, "/ui/", path())
	c := sessionCookie()
	require.NotNil(t, c)
	require.True(t, c.HTTPOnly)
	require.True(t, c.Secure, "served over TLS")
	require.Equal(t, proto.NetworkCookieSameSiteStrict, c.SameSite)
	require.Equal(t, "/", c.Path)
	require.Equal(t, "", page.MustEval(`() => document.cookie`).Str(), "scripts see no cookie")
	rows := page.MustElements("#trace-rows tr[data-id]")
	require.Len(t, rows, 3)
	require.Equal(t, "k:seed-2", *rows[0].MustAttribute("data-id"), "newest first")

	// A signal sent while the page is open appears without a reload.
	page.MustElement("#live .on")
	require.Equal(t, http.StatusOK, send("live-1", "BTCUSDT"))
	row := page.MustElement(`#trace-rows tr[data-id="k:live-1"]`)
	require.Contains(t, row.MustText(), "dispatched")
	require.Equal(t, "k:live-1", *page.MustElements("#trace-rows tr[data-id]").First().MustAttribute("data-id"))
	shots.shoot(page, "traces")

	// Its page: the signal, the timeline and the order.
	wait := page.MustWaitNavigation()
	row.MustElement("a").MustClick()
	wait()
	require.Equal(t, "/ui/trace/k:live-1", path())
	require.Contains(t, page.MustElement("h1").MustText(), "k:live-1")
	events := page.MustElement("#events").MustText()
	require.Contains(t, events, "received")
	require.Contains(t, events, "dispatched")
	require.Contains(t, page.MustElement("#orders").MustText(), "filled")
	require.NotContains(t, page.MustElement("#signal").MustText(), webhookSecret)
	shots.shoot(page, "trace")

	navigate("/ui/orders")
	require.Len(t, page.MustElements("#order-list tbody tr"), 4)
	shots.shoot(page, "orders")

	// A resting limit order's page keeps itself up to date: when its
	// follow job records the fill, the page shows it without a click.
	rest := fmt.Sprintf(`{"secret":%q,"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.02","price":"90","trace_id":"rest-1"}`, webhookSecret)
	res, err := client.Post(ts.URL+"/webhook", "application/json", strings.NewReader(rest))
	require.NoError(t, err)
	require.NoError(t, res.Body.Close())
	require.Equal(t, http.StatusOK, res.StatusCode)
	navigate("/ui/trace/k:rest-1")
	page.MustElement("#orders .s-open")
	var restID string
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT client_order_id FROM orders WHERE trace_id = 'k:rest-1'").Scan(&restID))
	_, err = db.ApplyOrderUpdate(ctx, b.pool, restID, db.OrderUpdate{Status: exchange.StatusFilled,
		FilledQuantity: decimal.RequireFromString("0.02"), AvgPrice: decimal.NewNullDecimal(decimal.RequireFromString("89.95")),
		Fee: decimal.NewNullDecimal(decimal.RequireFromString("0.00002")), FeeAsset: "BTC"}, nil)
	require.NoError(t, err)
	page.MustElement("#orders .s-filled")
	require.Contains(t, page.MustElement("#orders").MustText(), "0.00002 BTC")

	navigate("/ui/stats")
	page.MustElement("#chart svg polyline")
	shots.shoot(page, "stats")

	navigate("/ui/venues")
	require.Contains(t, page.MustElement("#venues").MustText(), "paper")
	shots.shoot(page, "venues")

	// The kill switch, engaged and released with the typed word.
	navigate("/ui/kill-switch")
	page.MustElement(`#ks-form input[name="reason"]`).MustInput("browser drill")
	page.MustElement("#ks-confirm").MustInput("ENGAGE")
	submit(`#ks-form button[type="submit"]`)
	require.Contains(t, page.MustElement("#halted").MustText(), "browser drill")
	ks, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.True(t, ks.Engaged)
	require.Equal(t, http.StatusServiceUnavailable, send("while-halted", "BTCUSDT"))
	shots.shoot(page, "killswitch")
	page.MustElement("#ks-confirm").MustInput("DISENGAGE")
	submit(`#ks-form button[type="submit"]`)
	require.Contains(t, page.MustElement(".notice").MustText(), "released")
	ks, err = db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged)

	// A link to a trace from another site (a chat message) opens the
	// trace, though the SameSite=Strict cookie is not sent with it.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<a id="out" href="%s/ui/trace/k:live-1">trace</a>`, ts.URL)
	}))
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1) // another site
	page.MustNavigate(otherURL).MustWaitLoad()
	page.MustElement("#out").MustClick()
	// The click lands on the bounce page, which reloads the same address:
	// two navigations whose timing the test does not control. A query
	// that meets one in flight fails ("Inspected target navigated or
	// closed") and is asked again until the trace's heading is there.
	landed := ""
	for landed == "" {
		el, err := page.ElementR("h1", "k:live-1")
		if err == nil {
			landed, err = el.Text()
		}
		require.NoError(t, ctx.Err(), "never landed on the trace (the login instead?); last error: %v", err)
	}
	require.Equal(t, "/ui/trace/k:live-1", path())

	// River's UI opens on the same session.
	navigate("/admin/river/")
	require.True(t, strings.HasPrefix(path(), "/admin/river"), path())

	// A phone-sized view of the list, for the README.
	navigate("/ui/")
	page.MustSetViewport(390, 844, 2, true)
	shots.shoot(page, "traces-phone")
	page.MustSetViewport(1280, 860, 1, false)

	// Logout ends the session; the list is behind the login again.
	submit("#logout")
	require.Equal(t, "/ui/login", path())
	require.Contains(t, page.MustElement(".notice").MustText(), "logged out")
	require.Nil(t, sessionCookie())
	navigate("/ui/")
	require.Equal(t, "/ui/login", path())
	var n int
	require.NoError(t, b.pool.QueryRow(ctx, "SELECT count(*) FROM ui_sessions").Scan(&n))
	require.Zero(t, n)
}
