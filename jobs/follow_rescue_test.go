package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/jobs"
)

// A follow job left `running` by a replica killed with -9 holds its
// order's follow (the job is unique while live) until River's rescuer
// runs it again: an hour by River's default, during which a fill went
// unrecorded (its sibling exit uncancelled, a spot sale still counted in
// the ledger). The rescuer now takes such a job for dead once the longest
// worker timeout has passed (the purge's ten minutes, plus one): twelve
// minutes after its attempt began, the order's fill is recorded.
func TestAFollowJobLeftRunningByADeadReplicaIsRescuedWithinMinutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupFollow(t)
	out, err := b.gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"2","price":"90","trace_id":"stuck"}`))
	require.NoError(t, err)
	require.Equal(t, "open", out.Order.Status)
	b.queuedFollow(t, "k:stuck")

	// The replica that took the job died with it running, twelve minutes ago.
	tag, err := b.pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '12 minutes',
		attempted_by = ARRAY['dead-replica'] WHERE kind = 'follow' AND args->>'trace_id' = 'k:stuck'`)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	n, err := b.paper.SetPrice(ctx, "BTCUSDT", false, decimal.RequireFromString("89"))
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the resting buy filled at the venue")

	startClient(t, b.testBundle, jobs.Config{})
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM orders WHERE trace_id = 'k:stuck' AND status = 'filled'") == 1
	}, 90*time.Second, 100*time.Millisecond, "the fill of an order whose follow job a dead replica left running is recorded")
}
