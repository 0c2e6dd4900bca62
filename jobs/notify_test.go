package jobs_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertest"
	"github.com/riverqueue/river/rivertype"
	"github.com/shopspring/decimal"
	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/internal/pgtest"
	"github.com/hoox/hoox/internal/testutil"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
)

// fixedTime stubs River's clock so a snooze's scheduled_at can be checked
// exactly.
type fixedTime struct{ now time.Time }

func (f fixedTime) Now() time.Time       { return f.now }
func (f fixedTime) NowOrNil() *time.Time { return &f.now }

type notifyBundle struct {
	fake    *notifyfake.Server
	logs    *testutil.LogBuffer
	logger  *slog.Logger
	metrics *jobs.NotifyMetrics
	now     time.Time
	worker  *rivertest.Worker[jobs.NotifyArgs, pgx.Tx]
}

// setupNotify is a notify worker sending to a fake of all three channels,
// logging into a buffer, on River's stubbed clock.
func setupNotify(t *testing.T, cfg func(notify.Config) notify.Config) *notifyBundle {
	t.Helper()
	b := &notifyBundle{fake: notifyfake.New(t), metrics: jobs.NewNotifyMetrics(nil),
		now: time.Now().UTC().Truncate(time.Millisecond)}
	b.logger, b.logs = testutil.TextLogs()
	c := b.fake.Config()
	c.HTTPClient = testHTTPClient(t)
	if cfg != nil {
		c = cfg(c)
	}
	sender, err := notify.New(c)
	require.NoError(t, err)
	w := jobs.NewNotifyWorker(sender, b.logger, b.metrics)
	b.worker = rivertest.NewWorker(t, riverpgxv5.New(nil),
		&river.Config{Logger: b.logger, Test: river.TestConfig{Time: fixedTime{b.now}}}, w)
	return b
}

// testHTTPClient has its own transport whose idle connections close when
// the test ends, so goleak sees no keep-alive goroutine.
func testHTTPClient(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func (b *notifyBundle) count(channel, outcome string) float64 {
	return counterValue(b.metrics, channel, outcome)
}

// counterValue reads hoox_notifications_total{channel,outcome}.
func counterValue(m *jobs.NotifyMetrics, channel, outcome string) float64 {
	var out dto.Metric
	if err := m.Notifications.WithLabelValues(channel, outcome).(prometheus.Metric).Write(&out); err != nil {
		panic(err)
	}
	return out.GetCounter().GetValue()
}

// requireNoSecrets fails if the bot token or a webhook's secret part is in
// any of texts.
func requireNoSecrets(t *testing.T, fake *notifyfake.Server, texts ...string) {
	t.Helper()
	for _, text := range texts {
		for _, s := range fake.Secrets() {
			require.NotContains(t, text, s)
		}
	}
}

func jobErrors(job *rivertype.JobRow) string {
	var s []string
	for _, e := range job.Errors {
		s = append(s, e.Error)
	}
	return strings.Join(s, "\n")
}

// requireRetried checks that River will run job again: a short backoff
// leaves it available (with a later scheduled_at), a longer one retryable.
func requireRetried(t *testing.T, job *rivertype.JobRow, channel string) {
	t.Helper()
	require.Contains(t, []rivertype.JobState{rivertype.JobStateAvailable, rivertype.JobStateRetryable}, job.State, channel)
	require.Less(t, job.Attempt, job.MaxAttempts, channel)
	require.Len(t, job.Errors, 1, channel)
}

func rejectedMessage(traceID string) notify.Message {
	return notify.Message{Event: notify.EventRejected, TraceID: traceID, Mode: "live", Exchange: "paper",
		Symbol: "BTCUSDT", Action: "buy", Quantity: "0.5", ClientOrderID: traceID + "-0",
		Detail: "insufficient balance", Time: time.Now()}
}

func TestNotifyWorker(t *testing.T) {
	t.Parallel()
	// Each subtest holds a transaction per channel until it ends: one
	// pool each, so parallel subtests never wait on each other's.
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	channels := []string{notify.ChannelTelegram, notify.ChannelDiscord, notify.ChannelSlack}

	t.Run("Sent", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		for _, ch := range channels {
			res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: ch, Message: rejectedMessage("sent-1")}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCompleted, res.EventKind, ch)
			reqs := b.fake.Requests(ch)
			require.Len(t, reqs, 1, ch)
			require.Contains(t, reqs[0].Text(), "hoox: order rejected", ch)
			require.Contains(t, reqs[0].Text(), "sent-1", ch)
			require.Equal(t, 1.0, b.count(ch, "sent"), ch)
		}
	})

	t.Run("RefusedIsCancelledNotRetried", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		b.fake.Script(notify.ChannelTelegram, notifyfake.Refused(http.StatusBadRequest, "Bad Request: chat not found"))
		b.fake.Script(notify.ChannelDiscord, notifyfake.Refused(http.StatusNotFound, "Unknown Webhook"))
		b.fake.Script(notify.ChannelSlack, notifyfake.Refused(http.StatusForbidden, "invalid_token"))
		for _, ch := range channels {
			res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: ch, Message: rejectedMessage("refused-1")}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobCancelled, res.EventKind, ch)
			require.Equal(t, rivertype.JobStateCancelled, res.Job.State, ch)
			require.Len(t, b.fake.Requests(ch), 1, ch)
			require.Equal(t, 1.0, b.count(ch, "refused"), ch)
			require.Zero(t, b.count(ch, "retried"), ch)
			require.Contains(t, jobErrors(res.Job), "notify "+ch+": status 4", ch)
			requireNoSecrets(t, b.fake, jobErrors(res.Job))
		}
		logs := b.logs.String()
		require.Contains(t, logs, "notification refused")
		require.Contains(t, logs, "channel=discord")
		require.Contains(t, logs, "Unknown Webhook")
		requireNoSecrets(t, b.fake, logs)
	})

	t.Run("RateLimitSnoozesForRetryAfter", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		waits := map[string]time.Duration{
			notify.ChannelTelegram: 7 * time.Second,         // parameters.retry_after
			notify.ChannelDiscord:  1500 * time.Millisecond, // retry_after, fractional
			notify.ChannelSlack:    3 * time.Second,         // Retry-After header
		}
		for _, ch := range channels {
			b.fake.Script(ch, notifyfake.RateLimited(waits[ch]))
			res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: ch, Message: rejectedMessage("limited-1")}, nil)
			require.NoError(t, err)
			require.Equal(t, river.EventKindJobSnoozed, res.EventKind, ch)
			require.Equal(t, b.now.Add(waits[ch]), res.Job.ScheduledAt.UTC(), ch)
			require.Zero(t, res.Job.Attempt, "%s: waiting out a rate limit spends no attempt", ch)
			require.Equal(t, 1.0, b.count(ch, "rate_limited"), ch)
		}
		requireNoSecrets(t, b.fake, b.logs.String())
	})

	t.Run("ServerErrorRetriesWithBackoff", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		for _, ch := range channels {
			b.fake.Script(ch, notifyfake.ServerError())
			res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: ch, Message: rejectedMessage("flaky-1")}, nil)
			require.ErrorContains(t, err, "status 500")
			require.Equal(t, river.EventKindJobFailed, res.EventKind, ch)
			requireRetried(t, res.Job, ch)
			require.True(t, res.Job.ScheduledAt.After(b.now), "%s: retried later, not at once", ch)
			require.Equal(t, jobs.NotifyMaxAttempts, res.Job.MaxAttempts)
			require.Equal(t, 1.0, b.count(ch, "retried"), ch)
		}
	})

	t.Run("LastAttemptIsExhausted", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		b.fake.Script(notify.ChannelSlack, notifyfake.ServerError())
		res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: notify.ChannelSlack, Message: rejectedMessage("gone-1")},
			&river.InsertOpts{Queue: jobs.NotifyQueue, MaxAttempts: 1})
		require.Error(t, err)
		require.Equal(t, rivertype.JobStateDiscarded, res.Job.State)
		require.Equal(t, 1.0, b.count(notify.ChannelSlack, "exhausted"))
		require.Contains(t, b.logs.String(), "notification failed on its last attempt")
	})

	t.Run("EndlessRateLimitSpendsAttempts", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		b := setupNotify(t, nil)
		b.fake.Script(notify.ChannelDiscord, notifyfake.RateLimited(time.Second))
		res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: notify.ChannelDiscord, Message: rejectedMessage("limited-2")},
			&river.InsertOpts{Queue: jobs.NotifyQueue, MaxAttempts: jobs.NotifyMaxAttempts,
				Metadata: []byte(`{"snoozes": 20}`)})
		require.ErrorContains(t, err, "status 429")
		requireRetried(t, res.Job, "discord")
		require.Equal(t, 1, res.Job.Attempt)
	})

	t.Run("TransportErrorRetriesWithoutLeakingSecrets", func(t *testing.T) {
		t.Parallel()
		pool := pgtest.OpenPool(t, url)
		dead := httptest.NewServer(http.NotFoundHandler())
		deadURL := dead.URL
		dead.Close()
		b := setupNotify(t, func(c notify.Config) notify.Config {
			live := c.TelegramBaseURL
			c.TelegramBaseURL = deadURL
			c.DiscordWebhookURL = strings.Replace(c.DiscordWebhookURL, live, deadURL, 1)
			c.SlackWebhookURL = strings.Replace(c.SlackWebhookURL, live, deadURL, 1)
			return c
		})
		for _, ch := range channels {
			res, err := b.worker.Work(ctx, t, beginTx(t, pool), jobs.NotifyArgs{Channel: ch, Message: rejectedMessage("dead-1")}, nil)
			require.ErrorContains(t, err, "connection refused")
			requireRetried(t, res.Job, ch)
			requireNoSecrets(t, b.fake, err.Error(), jobErrors(res.Job))
		}
		logs := b.logs.String()
		require.Contains(t, logs, "connection refused", "the log says what went wrong")
		requireNoSecrets(t, b.fake, logs)
	})
}

// countingInserter records whether the Notifier touched the database.
type countingInserter struct{ calls int }

func (c *countingInserter) InsertManyTx(context.Context, pgx.Tx, []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	c.calls++
	return nil, nil
}

func notifyJobs(t *testing.T, pool *pgxpool.Pool) []*rivertype.JobRow {
	t.Helper()
	rows, err := pool.Query(context.Background(),
		`SELECT kind, queue, max_attempts, args::text FROM river_job WHERE kind = 'notify' ORDER BY id`)
	require.NoError(t, err)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*rivertype.JobRow, error) {
		var j rivertype.JobRow
		var args string
		err := row.Scan(&j.Kind, &j.Queue, &j.MaxAttempts, &args)
		j.EncodedArgs = []byte(args)
		return &j, err
	})
	require.NoError(t, err)
	return out
}

func TestNotifyInsertTx(t *testing.T) {
	t.Parallel()
	fake := notifyfake.New(t)
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	// An insert-only client, as the gateway holds.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	n, err := jobs.NewNotifier(fake.Config())
	require.NoError(t, err)

	// Rolled back with the event: nothing is queued.
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	require.NoError(t, n.InsertTx(ctx, client, tx, rejectedMessage("rollback-1")))
	require.NoError(t, tx.Rollback(ctx))
	require.Empty(t, notifyJobs(t, pool))

	// Committed with the event: one job per channel.
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		return n.InsertTx(ctx, client, tx, rejectedMessage("commit-1"))
	}))
	got := notifyJobs(t, pool)
	require.Len(t, got, 3)
	for i, ch := range []string{notify.ChannelTelegram, notify.ChannelDiscord, notify.ChannelSlack} {
		require.Equal(t, jobs.NotifyQueue, got[i].Queue)
		require.Equal(t, jobs.NotifyMaxAttempts, got[i].MaxAttempts)
		require.Contains(t, string(got[i].EncodedArgs), `"channel": "`+ch+`"`)
		require.Contains(t, string(got[i].EncodedArgs), `"trace_id": "commit-1"`)
		// The stored job names the channel, never its token or URL.
		requireNoSecrets(t, fake, string(got[i].EncodedArgs))
	}
}

func TestNotifyQueuesNothingWhenOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := notifyfake.New(t)
	var ins countingInserter

	// The default events leave out dispatched orders.
	cfg := fake.Config()
	cfg.Events = nil
	n, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	require.False(t, n.Enabled(notify.EventDispatched))
	require.NoError(t, n.InsertTx(ctx, &ins, nil, notify.Message{Event: notify.EventDispatched}))
	require.True(t, n.Enabled(notify.EventRejected))

	// No channel configured.
	none, err := jobs.NewNotifier(notify.Config{Events: notify.AllEvents()})
	require.NoError(t, err)
	require.False(t, none.Enabled(notify.EventRejected))
	require.NoError(t, none.InsertTx(ctx, &ins, nil, rejectedMessage("x")))

	// No notifier at all.
	var nilNotifier *jobs.Notifier
	require.False(t, nilNotifier.Enabled(notify.EventRejected))
	require.NoError(t, nilNotifier.InsertTx(ctx, &ins, nil, rejectedMessage("x")))

	require.Zero(t, ins.calls, "no statement on the order's path when nothing is sent")

	// And it does queue when enabled, in one statement for every channel.
	require.NoError(t, n.InsertTx(ctx, &ins, nil, rejectedMessage("x")))
	require.Equal(t, 1, ins.calls)

	_, err = jobs.NewNotifier(notify.Config{Events: []string{"exploded"}})
	require.ErrorContains(t, err, "notify.Events=exploded: is not an event")
}

// TestNotifyEndToEnd runs a River client with the notify worker on its own
// queue: an event committed with its notifications reaches all three
// channels, Discord's after the rate limit it asked for.
func TestNotifyEndToEnd(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := notifyfake.New(t)
	pool := pgtest.NewPool(t)
	logger, logs := testutil.TextLogs()

	cfg := fake.Config()
	cfg.HTTPClient = testHTTPClient(t)
	sender, err := notify.New(cfg)
	require.NoError(t, err)
	metrics := jobs.NewNotifyMetrics(nil)
	workers := river.NewWorkers()
	require.NoError(t, river.AddWorkerSafely(workers, jobs.NewNotifyWorker(sender, logger, metrics)))
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Logger:            logger,
		Workers:           workers,
		Queues:            map[string]river.QueueConfig{jobs.NotifyQueue: jobs.NotifyQueueConfig()},
		FetchPollInterval: 100 * time.Millisecond,
	})
	require.NoError(t, err)
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, client.Stop(sctx))
	})

	fake.Script(notify.ChannelDiscord, notifyfake.RateLimited(200*time.Millisecond))
	n, err := jobs.NewNotifier(cfg)
	require.NoError(t, err)
	msg := notify.Message{Event: notify.EventKillSwitch, Engaged: true, By: "admin from 10.0.0.7", Detail: "exchange maintenance"}
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return n.InsertTx(ctx, client, tx, msg) }))

	tg := fake.Await(t, notify.ChannelTelegram, 1)
	require.Contains(t, tg[0].Text(), "KILL SWITCH ENGAGED")
	sl := fake.Await(t, notify.ChannelSlack, 1)
	require.Contains(t, sl[0].Text(), "exchange maintenance")
	dc := fake.Await(t, notify.ChannelDiscord, 2)
	require.Equal(t, dc[0].Body, dc[1].Body, "the same message, sent again after the wait")

	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM river_job WHERE kind = 'notify' AND state = 'completed'`) == 3
	}, 30*time.Second, 20*time.Millisecond, "every notification job completes")
	require.Equal(t, 1.0, counterValue(metrics, notify.ChannelDiscord, "rate_limited"))
	require.Equal(t, 1.0, counterValue(metrics, notify.ChannelDiscord, "sent"))
	requireNoSecrets(t, fake, logs.String())
}

func TestNotifyTraceMessage(t *testing.T) {
	t.Parallel()
	o := exchange.Order{ClientOrderID: "hx-1-0", Symbol: "ETHUSDT", Action: "sell", Quantity: decimal.RequireFromString("1.250")}

	m := jobs.TraceMessage(db.Event{TraceID: "t-1", Event: "rejected", Detail: map[string]any{"reason": "insufficient balance"}}, "binance", "test", o)
	require.Equal(t, "hoox: order rejected (test)\norder: sell 1.25 ETHUSDT on binance\ntrace: t-1\nclient order ID: hx-1-0\nreason: insufficient balance",
		m.Text()[:strings.LastIndex(m.Text(), "\ntime: ")])
	require.False(t, m.Time.IsZero())

	m = jobs.TraceMessage(db.Event{TraceID: "t-2", Event: "reconciling", Detail: map[string]any{"cause": "read timeout"}}, "bybit", "live", o)
	require.Equal(t, "read timeout", m.Detail)

	// The reconcile worker's events carry the order only in their detail.
	m = jobs.TraceMessage(db.Event{TraceID: "t-3", Event: "reconciled",
		Detail: map[string]any{"client_order_id": "hx-3-0", "order_status": "filled", "placed": true}}, "paper", "live", exchange.Order{})
	require.Equal(t, "hx-3-0", m.ClientOrderID)
	require.Equal(t, "the venue had no order; placed it again (filled)", m.Detail)
	require.Empty(t, m.Quantity)
}
