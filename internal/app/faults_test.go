package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/apptest"
)

func TestRepeatDuringASlowVenueIsInProgressThenDuplicate(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t, func(c *app.Config) { c.Timing.LockWait = 200 * time.Millisecond })
	b.App.Paper().SetFaults(paper.Faults{Delay: 3 * time.Second})
	body := apptest.Signal(`"trace_id":"slow-1"`)
	first := make(chan apptest.Reply, 1)
	go func() { first <- apptest.Post(t, b.URL, body) }()
	// The attempt marker commits before the venue is called: once it is
	// there, the first attempt holds the lock and waits on the venue.
	require.Eventually(t, func() bool {
		return apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:slow-1' AND event = 'dispatch_started'") == 1
	}, 10*time.Second, 10*time.Millisecond)

	r := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.Equal(t, "in_progress", r.Str("code"))
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	done := <-first
	require.Equal(t, http.StatusOK, done.Status, done.Raw)
	r = apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.Equal(t, "duplicate", r.Str("code"))
	require.Equal(t, done.Str("order", "id"), r.Str("original", "order_id"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
}

func TestLostAnswerIs202ThenReconciledToOneFill(t *testing.T) {
	t.Parallel()
	b := apptest.Setup(t)
	b.App.Paper().SetFaults(paper.Faults{LoseAnswer: true})
	body := apptest.Signal(`"trace_id":"lost-1"`)
	r := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	require.Equal(t, "reconciling", r.Str("status"))
	b.App.Paper().SetFaults(paper.Faults{})

	// The reconcile job (River, in this same process) adopts the fill.
	require.Eventually(t, func() bool {
		return apptest.Text(t, b.Pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:lost-1'") == "dispatched"
	}, 30*time.Second, 20*time.Millisecond)
	again := apptest.Post(t, b.URL, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.Str("code"))
	require.Equal(t, "dispatched", again.Str("original", "status"))
	require.NotEmpty(t, again.Str("original", "order_id"))
	require.Equal(t, 1, apptest.Fills(t, b.Pool))
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, apptest.Count(t, b.Pool, "SELECT count(*) FROM trace_history WHERE trace_id = 'k:lost-1' AND event = 'reconciled'"))
}
