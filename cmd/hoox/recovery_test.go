package main

import (
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/apptest"
	"github.com/hoox/hoox/internal/pgtest"
)

// A window-mode signal (no key, no timestamp) whose hoox is killed between
// the venue's answer and the commit: the resend arrives later, gets a new
// trace ID (its own arrival time), and must still find the order the dead
// process placed, through the intent keyed on the signal's fingerprint.
func TestWindowSignalCrashThenResendPlacesOnce(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	body := apptest.Signal("") // neither trace_id nor timestamp: window mode

	doomed := startServe(t, dbURL, "HOOX_DRILL_CRASH_AFTER_VENUE=true")
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+body), "the connection dies with the process")
	var exit *exec.ExitError
	require.ErrorAs(t, <-waitOr(doomed.exited), &exit, "hoox was killed")
	require.Equal(t, 1, apptest.Fills(t, pool), "the venue holds the order")
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM trace_ids"))

	survivor := startServe(t, dbURL)
	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusOK, r.Status, r.Raw)
	require.Equal(t, 1, apptest.Fills(t, pool), "the resend adopted the order: paper_orders holds one row")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE event = 'adopted'"))
	require.Equal(t, http.StatusConflict, apptest.Post(t, survivor.url, body).Status, "inside the window, a duplicate")
}

// TradingView does not resend after a reset connection. The process dies
// between the venue's answer and the commit, and nobody resends: the
// sweeper of the next process records the order and creates the trace, so
// hoox's books match the venue's and a late resend is a duplicate.
func TestCrashWithoutAResendIsRecordedByTheSweeper(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.NewDatabase(t)
	pool := pgtest.OpenPool(t, dbURL)
	body := apptest.Signal(`"trace_id":"nobody-resends"`)

	doomed := startServe(t, dbURL, "HOOX_DRILL_CRASH_AFTER_VENUE=true")
	require.Equal(t, 0, apptest.SendOnce(doomed.url+"|"+body))
	<-waitOr(doomed.exited)
	require.Equal(t, 1, apptest.Fills(t, pool))
	require.Zero(t, apptest.Count(t, pool, "SELECT count(*) FROM orders"), "nothing recorded yet: only the intent")

	survivor := startServe(t, dbURL, "HOOX_SWEEP_INTERVAL=1s", "HOOX_SWEEP_GRACE=1s")
	require.Eventually(t, func() bool {
		return apptest.Count(t, pool, "SELECT count(*) FROM trace_ids WHERE trace_id = 'k:nobody-resends' AND status = 'dispatched'") == 1
	}, 60*time.Second, 50*time.Millisecond, "the sweeper never recorded the dead attempt's order")
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:nobody-resends'"))
	require.Equal(t, 1, apptest.Count(t, pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:nobody-resends' AND event = 'swept'"))

	r := apptest.Post(t, survivor.url, body)
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.Equal(t, "duplicate", r.Str("code"))
	require.Equal(t, 1, apptest.Fills(t, pool))
}
