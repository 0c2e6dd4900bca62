package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange/paper"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/codes"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
	"github.com/hoox/hoox/testcontainers"
)

// A rejected order is notified on every configured channel: the jobs
// commit with the rejection (so a rolled-back claim notifies nothing), and
// River delivers them once started, never on the order's path.
func TestRejectedOrderIsNotifiedOnEveryChannel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	cfg := fake.Config()
	notifier, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	sender, err := notify.New(cfg)
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier, NotifySender: sender})
	require.NoError(t, err)
	gw := gateway.New(gateway.DefaultConfig(), gateway.Deps{Pool: b.pool, MarkerPool: testcontainers.OpenPool(t, b.url), Venues: b.venues,
		Jobs: client, Notifier: notifier})
	t.Cleanup(gw.Close)

	// Refused before anything is recorded (kill switch off, but the venue
	// unreachable): the claim rolls back and no notification exists.
	b.paper.SetFaults(paper.Faults{Unreachable: true})
	_, err = gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"1","trace_id":"nope"}`))
	require.Error(t, err)
	require.Zero(t, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify'"))

	b.paper.SetFaults(paper.Faults{Reject: "insufficient balance <&>"})
	_, err = gw.Execute(ctx, input(t, `{"exchange":"paper","symbol":"ETHUSDT","action":"sell","quantity":"2","trace_id":"refused"}`))
	var ge *gateway.Error
	require.ErrorAs(t, err, &ge)
	require.Equal(t, codes.OrderRejected, ge.Code)
	require.Equal(t, db.TraceRejected, traceStatus(t, b.pool, "k:refused"))
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'rejected'"),
		"one job per channel, committed with the rejection")

	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(sctx))
	})
	for _, ch := range []string{notify.ChannelTelegram, notify.ChannelDiscord, notify.ChannelSlack} {
		reqs := fake.Await(t, ch, 1)
		require.Contains(t, reqs[0].Text(), "k:refused", "channel %s", ch)
		require.Contains(t, reqs[0].Text(), "insufficient balance", "channel %s", ch)
	}
}

// A kill switch change queues its notification in the change's own
// transaction: both commit, or (when queuing fails) neither does.
func TestKillSwitchChangeIsNotifiedWithTheChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	fake := notifyfake.New(t)
	notifier, err := jobs.NewNotifier(fake.Config())
	require.NoError(t, err)
	client, err := jobs.NewClient(b.pool, jobs.Config{}, jobs.Deps{Venues: b.venues, Notifier: notifier})
	require.NoError(t, err)
	admin := &api.Admin{Pool: b.pool, River: client, Notifier: notifier}

	_, err = db.SetKillSwitch(ctx, b.pool, true, "venue incident", "ops", admin.KillSwitchHook(true, "venue incident", "ops"))
	require.NoError(t, err)
	require.EqualValues(t, 3, count(t, b.pool, "SELECT count(*) FROM river_job WHERE kind = 'notify' AND args->'message'->>'event' = 'kill_switch'"))

	failing := func(context.Context, pgx.Tx) error { return errors.New("queue down") }
	_, err = db.SetKillSwitch(ctx, b.pool, false, "", "ops", failing)
	require.Error(t, err)
	k, err := db.GetKillSwitch(ctx, b.pool)
	require.NoError(t, err)
	require.True(t, k.Engaged, "a change whose notification could not be queued did not happen")
}
