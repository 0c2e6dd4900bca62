package jobs_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify/notifyfake"
)

// Path (review-admin, "notify only on flip"): a fresh installation, whose
// settings hold no kill_switch row yet (no migration seeds it). Replica 1
// engages the switch; at the same moment replica 2 releases it. The
// release's SELECT … FOR UPDATE finds no row to lock (the engage's insert
// is not committed), reads was=false, then its upsert waits for the
// engage's insert and overwrites it with engaged=false. It then judges
// was == engaged (false == false): "a repeat", and queues no
// notification. Trading runs again, but the channels heard only
// "engaged": on call believes trading is halted.
func TestKillSwitchReleaseRacingFirstEngageIsNotified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	notifier, err := jobs.NewNotifier(fake.Config())
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier})
	require.NoError(t, err)
	admin := &api.Admin{Pool: b.pool, River: client, Notifier: notifier}
	notified := func() int64 {
		return count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'kill_switch'")
	}
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM settings WHERE key = $1", db.SettingKillSwitch), "a fresh installation")

	// Replica 1's engage, held open after its upsert (its hook runs in
	// the transaction, before the commit).
	inEngage, finishEngage := make(chan struct{}), make(chan struct{})
	engageDone := make(chan error, 1)
	go func() {
		hook := admin.KillSwitchHook(true, "venue incident", "ops")
		_, err := db.SetKillSwitch(ctx, b.pool, true, "venue incident", "ops", func(ctx context.Context, tx pgx.Tx) error {
			if err := hook(ctx, tx); err != nil {
				return err
			}
			close(inEngage)
			<-finishEngage
			return nil
		})
		engageDone <- err
	}()
	<-inEngage

	// Replica 2's release, while the engage is uncommitted: it blocks on
	// the engage's inserted row.
	releaseDone := make(chan error, 1)
	go func() {
		_, err := db.SetKillSwitch(ctx, b.pool, false, "false alarm", "ops2", admin.KillSwitchHook(false, "false alarm", "ops2"))
		releaseDone <- err
	}()
	require.Eventually(t, func() bool {
		return count(t, b.pool, "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'") > 0
	}, 30*time.Second, 10*time.Millisecond, "the release waits for the engage's row")
	close(finishEngage)
	require.NoError(t, <-engageDone)
	require.NoError(t, <-releaseDone)

	k, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.False(t, k.Engaged, "the release took effect last: trading runs")
	require.EqualValues(t, 6, notified(),
		"the channels were told trading halted (3 jobs); they must also be told it resumed (3 more), or on call believes it is still halted")
}
