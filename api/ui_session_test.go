package api_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// The web page's login never takes the admin token from the query string
// (README): a request line lands in every proxy's access log and in the
// browser's history. POST /ui/login?token=<admin token> with a form that
// lacks it must not start a session.
func TestUILoginRefusesTheTokenInTheQueryString(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken})
	req := httptest.NewRequest(http.MethodPost, "/ui/login?token="+url.QueryEscape(adminToken), strings.NewReader("next=%2Fui%2F"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	b.handler.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		require.False(t, ck.Name == "hoox_session" && ck.Value != "",
			"a token in the query string started a session (status %d, Location %s)", rec.Code, rec.Header().Get("Location"))
	}
	require.NotEqual(t, http.StatusSeeOther, rec.Code, rec.Body.String())
}

// The page's state changes read their fields, the CSRF token included,
// from the form body alone: a link that carries them in its query string
// (which anyone can craft, and which lands in logs) changes nothing.
func TestUIStateChangesIgnoreTheQueryString(t *testing.T) {
	t.Parallel()
	b, br := loggedInWithATrace(t, "query-target")

	post := func(path, query string, form url.Values) response {
		req := httptest.NewRequest(http.MethodPost, path+"?"+query, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", br.origin)
		return br.send(req)
	}
	csrf := url.Values{"csrf": {br.csrf}}.Encode()
	// The CSRF token in the query string only.
	res := post("/ui/kill-switch", csrf, url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}})
	require.Equal(t, http.StatusForbidden, res.Status, string(res.Body))
	// The fields in the query string, the CSRF token in the form.
	res = post("/ui/kill-switch", "engaged=true&confirm=ENGAGE", url.Values{"csrf": {br.csrf}})
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))
	res = post("/ui/release", "trace_id=k:query-target&confirm=yes", url.Values{"csrf": {br.csrf}})
	require.Equal(t, http.StatusBadRequest, res.Status, string(res.Body))

	ks, err := db.GetKillSwitch(t.Context(), b.pool)
	require.NoError(t, err)
	require.False(t, ks.Engaged, "no query string engaged the kill switch")
	d, err := db.GetTrace(t.Context(), b.pool, "k:query-target")
	require.NoError(t, err)
	require.NotNil(t, d.Trace, "no query string released the trace")
}
