package api_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
)

// The web page's reads and changes run under the admin statement timeout,
// as the admin API's do: a page whose query is stuck behind a lock gets
// the 503 page once Postgres cancels the statement, nothing is changed,
// and no backend is left waiting. Before, the page's queries ran on the
// bare pool and waited for as long as the lock was held.
func TestUIQueriesStopAtTheStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupUI(t, uiOpts{adminToken: adminToken, statementTimeout: 300 * time.Millisecond})
	br := newBrowser(t, b.handler)
	br.login(adminToken)
	require.Equal(t, http.StatusOK, sendSignal(t, b.handler, "stuck-target").Status)

	// Another session holds what the page's queries need.
	holder, err := b.pool.Begin(ctx)
	require.NoError(t, err)
	released := false
	release := func() {
		if !released {
			released = true
			require.NoError(t, holder.Rollback(ctx))
		}
	}
	t.Cleanup(release)
	_, err = holder.Exec(ctx, `LOCK TABLE trace_ids IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `INSERT INTO settings (key, value) VALUES ($1, '{"engaged": false}')
		ON CONFLICT (key) DO UPDATE SET value = settings.value`, db.SettingKillSwitch)
	require.NoError(t, err)

	answer := func(what string, do func() response) response {
		t.Helper()
		done := make(chan response, 1)
		go func() { done <- do() }()
		select {
		case r := <-done:
			return r
		case <-time.After(20 * time.Second):
			release() // let the stuck request end, so the test can
			<-done
			t.Fatalf("%s: no answer while a lock was held: the page's query waits for ever", what)
			return response{}
		}
	}
	for what, do := range map[string]func() response{
		"GET /ui/": func() response { return br.get("/ui/") },
		"POST /ui/release": func() response {
			return br.post("/ui/release", url.Values{"trace_id": {"k:stuck-target"}, "confirm": {"yes"}, "csrf": {br.csrf}}, nil)
		},
		"POST /ui/kill-switch": func() response {
			return br.post("/ui/kill-switch", url.Values{"engaged": {"true"}, "confirm": {"ENGAGE"}, "reason": {"drill"}, "csrf": {br.csrf}}, nil)
		},
	} {
		r := answer(what, do)
		require.Equal(t, http.StatusServiceUnavailable, r.Status, "%s: %s", what, r.Body)
		require.Contains(t, string(r.Body), "statement timeout", what)
	}
	var waiting int
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting))
	require.Zero(t, waiting, "Postgres stopped the page's statements: nobody waits on the holder's locks")

	release()
	changedNothing(t, b, br, "k:stuck-target", "the timed-out forms")
}
