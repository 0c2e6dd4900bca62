package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

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
// token spends the same budget as a wrong login, and while an address
// waits neither is even compared.
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

	// Now the address waits: the right token is refused unchecked, on the
	// API and on the page.
	r := bearer(t, b.handler, guesser, adminToken)
	require.Equal(t, http.StatusTooManyRequests, r.Status, string(r.Body))
	require.Equal(t, "rate_limited", r.problem(t)["code"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	wrong := bearer(t, b.handler, guesser, "guess-d")
	require.Equal(t, http.StatusTooManyRequests, wrong.Status, "no oracle while waiting")
	require.Equal(t, http.StatusTooManyRequests, br.post("/ui/login", url.Values{"token": {adminToken}}, nil).Status)

	// Another address is not held back.
	require.Equal(t, http.StatusOK, bearer(t, b.handler, "198.51.100.4:5555", adminToken).Status)

	// And wrong logins on the page count against the API too.
	page := newBrowser(t, b.handler)
	page.remote = "203.0.113.50:1"
	for range 3 {
		require.Equal(t, http.StatusUnauthorized, page.post("/ui/login", url.Values{"token": {"nope"}}, nil).Status)
	}
	require.Equal(t, http.StatusTooManyRequests, bearer(t, b.handler, page.remote, adminToken).Status)
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
	r := login("[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", adminToken)
	require.Equal(t, http.StatusTooManyRequests, r.Status, "another address of the same /64: %s", r.Body)
	require.Equal(t, http.StatusSeeOther, login("[2001:db8:1:3::1]:1", adminToken).Status, "the next /64 is someone else")

	for _, remote := range []string{"192.0.2.10:1", "192.0.2.11:1", "192.0.2.12:1"} {
		require.Equal(t, http.StatusUnauthorized, login(remote, "nope").Status, remote)
	}
	require.Equal(t, http.StatusSeeOther, login("192.0.2.13:1", adminToken).Status, "IPv4 is throttled per address")
}
