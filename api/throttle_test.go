package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bearer sends an admin request from remote with the given token; the
// answer (401, 429 or 200) is checked against the OpenAPI document.
func bearer(t *testing.T, h http.Handler, remote, token string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/admin/stats", nil)
	req.RemoteAddr = remote
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	contract(t, h).ServeHTTP(rec, req)
	return response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
}

// B9 of issue 17: /admin took any number of wrong bearer tokens, so the
// web page's login throttle could be walked around. Now a wrong bearer
// token spends the same budget as a wrong login. While an address waits,
// its wrong tokens are refused 429 on both doors; the right token gets
// through (fix-adminedge).
func TestAdminWrongBearerTokensShareTheLoginThrottle(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	const guesser = "192.0.2.1:1234"

	for i := range 2 {
		r := bearer(t, b.handler, guesser, "guess-"+string(rune('a'+i)))
		require.Equal(t, http.StatusUnauthorized, r.Status, string(r.Body))
		require.Equal(t, "unauthorized", r.problem(t)["code"])
	}
	// The third wrong token is a wrong login on the page: one budget.
	br := newBrowser(t, b.handler)
	br.remote = guesser
	require.Equal(t, http.StatusUnauthorized, br.post("/ui/login", url.Values{"token": {"guess-c"}}, nil).Status)

	// Now the address waits: wrong tokens are refused as too many, on the
	// API and on the page.
	r := bearer(t, b.handler, guesser, "guess-d")
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))
	require.Equal(t, "rate_limited", r.problem(t)["code"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	require.Equal(t, http.StatusTooManyRequests, br.post("/ui/login", url.Values{"token": {"guess-e"}}, nil).Status)
	// The right token is not held back.
	require.Equal(t, http.StatusOK, bearer(t, b.handler, guesser, adminToken).Status)

	// And wrong logins on the page count against the API too.
	page := newBrowser(t, b.handler)
	page.remote = "203.0.113.50:1"
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, page.post("/ui/login", url.Values{"token": {"nope"}}, nil).Status)
	}
	require.Equal(t, http.StatusTooManyRequests, bearer(t, b.handler, page.remote, "nope").Status)
}

// B9 of issue 17: the throttle was per exact address, and one IPv6 host
// holds a whole /64 to rotate through. IPv6 is now throttled per /64,
// IPv4 per address.
func TestLoginThrottleKeysIPv6ByItsSlash64(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	login := func(remote, token string) response {
		br := newBrowser(t, b.handler)
		br.remote = remote
		return br.post("/ui/login", url.Values{"token": {token}}, nil)
	}
	for _, remote := range []string{"[2001:db8:1:2::1]:1000", "[2001:db8:1:2::2]:1000", "[2001:db8:1:2:abcd::3]:1000"} {
		require.Equal(t, http.StatusUnauthorized, login(remote, "nope").Status, remote)
	}
	r := login("[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "nope")
	require.Equal(t, http.StatusTooManyRequests, r.Status, "another address of the same /64: %s", r.Body)
	require.Equal(t, http.StatusUnauthorized, login("[2001:db8:1:3::1]:1", "nope").Status, "the next /64 is someone else")

	for _, remote := range []string{"192.0.2.10:1", "192.0.2.11:1", "192.0.2.12:1"} {
		require.Equal(t, http.StatusUnauthorized, login(remote, "nope").Status, remote)
	}
	require.Equal(t, http.StatusUnauthorized, login("192.0.2.13:1", "nope").Status, "IPv4 is throttled per address")
}

// review-admin, noticed and left: while an address waited, the right token
// was refused unchecked too, so anyone sharing the operator's address (a
// NAT, an untrusted proxy, an IPv6 /64) kept the operator — and the kill
// switch — out with one wrong guess per wait. The right token is now
// compared first and always gets through; wrong guesses are still slowed.
func TestAFloodOfWrongTokensFromTheOperatorsAddressCannotKeepTheKillSwitchOut(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	const shared = "[2001:db8:7:7::1]:4000" // the operator's /64, shared with a guesser

	// A guesser on the same /64 floods wrong tokens from several clients
	// at once until the address waits.
	flooded := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				r := doFrom(t, b.handler, fmt.Sprintf("[2001:db8:7:7::%x]:1", i+2), http.MethodGet, "/admin/stats",
					fmt.Sprintf("guess-%d-%d", i, n), "")
				if r.Status == http.StatusTooManyRequests {
					once.Do(func() { close(flooded) })
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
	select {
	case <-flooded:
	case <-time.After(30 * time.Second):
		t.Fatal("the flood never made the address wait")
	}

	// Wrong guesses are still slowed, whatever the flood does.
	r := doFrom(t, b.handler, shared, http.MethodGet, "/admin/stats", "guess-operator-typo", "")
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	// The operator, during the flood, engages the kill switch.
	r = doFrom(t, b.handler, shared, http.MethodPut, "/admin/kill-switch", adminToken, `{"engaged": true, "reason": "incident"}`)
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	r = doFrom(t, b.handler, shared, http.MethodGet, "/admin/kill-switch", adminToken, "")
	require.Equal(t, http.StatusOK, r.Status, string(r.Body))
	require.Equal(t, true, r.json(t)["engaged"])

	// And logs in on the page.
	br := newBrowser(t, b.handler)
	br.remote = shared
	require.Equal(t, http.StatusSeeOther, br.post("/ui/login", url.Values{"token": {adminToken}}, nil).Status)

	// The operator getting in cleared nothing for the guesser.
	r = doFrom(t, b.handler, shared, http.MethodGet, "/admin/stats", "guess-after-the-operator", "")
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))
}
