package api_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The web page's reads and changes run under the admin statement timeout,
// as the admin API's do: a page whose query is stuck behind a lock gets
// the 503 page once Postgres cancels the statement, nothing is changed,
// and no backend is left waiting. Before, the page's queries ran on the
// bare pool and waited for as long as the lock was held.
func TestUIQueriesStopAtTheStatementTimeout(t *testing.T) {
	t.Parallel()
	b := setupUI(t, uiOpts{adminToken: adminToken, statementTimeout: 300 * time.Millisecond})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "stuck-target").Status)

	// Another session holds what the page's queries need.
	held := holdTracesAndKillSwitch(t, b.pool)
	for what, do := range map[string]func() response{
		"GET /ui/": func() response { return br.get("/ui/") },
		"POST /ui/release": func() response {
			return br.post("/ui/release", url.Values{"trace_id": {"k:stuck-target"}, "confirm": {"yes"}, "csrf": {br.csrf}}, nil)
		},
		"POST /ui/kill-switch": func() response {
			return br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"drill"}, "csrf": {br.csrf}}, nil)
		},
	} {
		r := held.answer(what, do)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s: %s", what, r.Body)
		require.Contains(t, string(r.Body), "statement timeout", what)
	}
	require.Zero(t, lockWaiters(t, b.pool), "Postgres stopped the page's statements: nobody waits on the holder's locks")

	held.release()
	changedNothing(t, b, br, "k:stuck-target", "the timed-out forms")
}
