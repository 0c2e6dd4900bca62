package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/exchange/paper"
)

func TestRepeatDuringASlowVenueIsInProgressThenDuplicate(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Gateway.LockWait = 200 * time.Millisecond })
	b.app.Paper().SetFaults(paper.Faults{Delay: 3 * time.Second})
	body := sig(`"trace_id":"slow-1"`)
	first := make(chan reply, 1)
	go func() { first <- post(t, b.url, body) }()
	// The attempt marker commits before the venue is called: once it is
	// there, the first attempt holds the lock and waits on the venue.
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM trace_events WHERE trace_id = 'k:slow-1' AND event = 'dispatch_started'") == 1
	}, 10*time.Second, 10*time.Millisecond)

	r := post(t, b.url, body)
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.Equal(t, "in_progress", r.str("code"))
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	done := <-first
	require.Equal(t, http.StatusOK, done.Status, done.Raw)
	r = post(t, b.url, body)
	require.Equal(t, http.StatusConflict, r.Status, r.Raw)
	require.Equal(t, "duplicate", r.str("code"))
	require.Equal(t, done.str("order", "id"), r.str("original", "order_id"))
	require.Equal(t, 1, fills(t, b.pool))
}

func TestLostAnswerIs202ThenReconciledToOneFill(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.app.Paper().SetFaults(paper.Faults{LoseAnswer: true})
	body := sig(`"trace_id":"lost-1"`)
	r := post(t, b.url, body)
	require.Equal(t, http.StatusAccepted, r.Status, r.Raw)
	require.Equal(t, "reconciling", r.str("status"))
	b.app.Paper().SetFaults(paper.Faults{})

	// The reconcile job (River, in this same process) adopts the fill.
	require.Eventually(t, func() bool {
		return count2str(t, b.pool, "SELECT status FROM trace_ids WHERE trace_id = 'k:lost-1'") == "dispatched"
	}, 30*time.Second, 20*time.Millisecond)
	again := post(t, b.url, body)
	require.Equal(t, http.StatusConflict, again.Status, again.Raw)
	require.Equal(t, "duplicate", again.str("code"))
	require.Equal(t, "dispatched", again.str("original", "status"))
	require.NotEmpty(t, again.str("original", "order_id"))
	require.Equal(t, 1, fills(t, b.pool))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM orders"))
	require.Equal(t, 1, count(t, b.pool, "SELECT count(*) FROM trace_events WHERE trace_id = 'k:lost-1' AND event = 'reconciled'"))
}
