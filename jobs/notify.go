package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/notify"
)

// NotifyQueue is the notifications' own queue: a channel that is down or
// slow fills it, never the queue reconciles run on.
const NotifyQueue = "notify"

// NotifyWorkers is how many notifications one replica sends at once (the
// MaxWorkers of NotifyQueue). Sending holds no database connection, so this
// costs the pool nothing; it is small because the services rate limit.
const NotifyWorkers = 2

// NotifyQueueConfig is NotifyQueue's entry for river.Config.Queues.
func NotifyQueueConfig() river.QueueConfig { return river.QueueConfig{MaxWorkers: NotifyWorkers} }

// NotifyMaxAttempts bounds retries of one notification: with River's default
// backoff (attempt⁴ seconds) ten attempts span about four hours of outage,
// after which the message is dropped (and counted as exhausted).
const NotifyMaxAttempts = 10

// NotifyMaxSnoozes bounds how often a notification waits out a rate limit
// without spending an attempt (River does not count snoozes as attempts).
// Past it, each further 429 spends one, so a service that never stops
// asking to wait cannot keep a job alive forever.
const NotifyMaxSnoozes = 20

// NotifyTimeout bounds one send, beyond the HTTP client's own timeout.
const NotifyTimeout = 30 * time.Second

// Outcomes of a notification attempt, as counted in
// hoox_notifications_total.
const (
	notifySent        = "sent"
	notifyRateLimited = "rate_limited"
	notifyRetried     = "retried"
	notifyRefused     = "refused"
	notifyExhausted   = "exhausted"
)

// NotifyArgs is one message to one channel. Each channel gets its own job,
// so a dead channel does not hold back the others. The arguments name the
// channel, never its token or URL: the worker holds those.
type NotifyArgs struct {
	Channel string         `json:"channel"`
	Message notify.Message `json:"message"`
}

// Kind names the job in River's tables.
func (NotifyArgs) Kind() string { return "notify" }

// InsertOpts put the job on its own queue with bounded retries.
func (NotifyArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: NotifyQueue, MaxAttempts: NotifyMaxAttempts}
}

// NotifyInserter queues jobs in the caller's transaction.
// *river.Client[pgx.Tx] satisfies it.
type NotifyInserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Notifier queues notifications for the events the configuration enables,
// one job per configured channel. Build it once from the configuration; a
// nil Notifier, or one with no channel, queues nothing and costs nothing.
type Notifier struct {
	channels []string
	cfg      notify.Config
}

// NewNotifier returns a notifier for cfg, or cfg's validation error.
func NewNotifier(cfg notify.Config) (*Notifier, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Notifier{channels: cfg.Channels(), cfg: cfg}, nil
}

// Enabled says whether InsertTx would queue anything for event, so a caller
// can skip building the message.
func (n *Notifier) Enabled(event string) bool {
	return n != nil && len(n.channels) > 0 && n.cfg.Enabled(event)
}

// InsertTx queues msg for every configured channel in tx, the transaction
// that records the event: the notification commits with the event or not at
// all. It is one statement, and none when msg's event is not enabled. A zero
// msg.Time is set to now.
func (n *Notifier) InsertTx(ctx context.Context, ins NotifyInserter, tx pgx.Tx, msg notify.Message) error {
	if !n.Enabled(msg.Event) {
		return nil
	}
	if msg.Time.IsZero() {
		msg.Time = time.Now()
	}
	params := make([]river.InsertManyParams, len(n.channels))
	for i, ch := range n.channels {
		params[i] = river.InsertManyParams{Args: NotifyArgs{Channel: ch, Message: msg}}
	}
	if _, err := ins.InsertManyTx(ctx, tx, params); err != nil {
		return fmt.Errorf("queue %s notification: %w", msg.Event, err)
	}
	return nil
}

// TraceMessage is the notification for ev, an audit event of a trace
// (rejected, reconciling, failed, reconciled, dispatched) whose order is o,
// sent to venue in mode. The gateway and the reconcile worker record these
// events; building the message in one place keeps the texts alike. The
// reason comes from the event's detail ("reason", else "cause").
func TraceMessage(ev db.Event, venue, mode string, o exchange.Order) notify.Message {
	m := notify.Message{Event: ev.Event, TraceID: ev.TraceID, Mode: mode, Exchange: venue,
		Symbol: o.Symbol, Action: o.Action, ClientOrderID: o.ClientOrderID, Time: time.Now()}
	if !o.Quantity.IsZero() {
		m.Quantity = o.Quantity.String()
	}
	detail := func(key string) string { s, _ := ev.Detail[key].(string); return s }
	if m.ClientOrderID == "" {
		m.ClientOrderID = detail("client_order_id")
	}
	m.Detail = detail("reason")
	if m.Detail == "" {
		m.Detail = detail("cause")
	}
	if ev.Event == notify.EventReconciled && m.Detail == "" {
		how := "the venue held the order"
		if placed, _ := ev.Detail["placed"].(bool); placed {
			how = "the venue had no order; placed it again"
		}
		if st := detail("order_status"); st != "" {
			how += " (" + st + ")"
		}
		m.Detail = how
	}
	return m
}

// NotifySender posts a message to a channel; *notify.Client satisfies it.
// Its errors are *notify.Error, which say whether to retry and when.
type NotifySender interface {
	Send(ctx context.Context, channel string, msg notify.Message) error
}

// NotifyMetrics are the notifications' Prometheus instruments.
type NotifyMetrics struct {
	// Notifications counts attempts by channel and outcome: sent,
	// rate_limited (waiting as asked), retried (5xx or no answer; River
	// backs off), refused (4xx: the token, chat or webhook is wrong;
	// dropped), exhausted (last attempt failed; dropped). Refused or
	// exhausted above zero means an operator missed a message.
	Notifications *prometheus.CounterVec
}

// NewNotifyMetrics builds the instruments and registers them on reg when it
// is not nil.
func NewNotifyMetrics(reg prometheus.Registerer) *NotifyMetrics {
	m := &NotifyMetrics{
		Notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hoox_notifications_total", Help: "Notification attempts, by channel and outcome.",
		}, []string{"channel", "outcome"}),
	}
	for _, ch := range []string{notify.ChannelTelegram, notify.ChannelDiscord, notify.ChannelSlack} {
		for _, o := range []string{notifySent, notifyRateLimited, notifyRetried, notifyRefused, notifyExhausted} {
			m.Notifications.WithLabelValues(ch, o)
		}
	}
	if reg != nil {
		reg.MustRegister(m.Notifications)
	}
	return m
}

// NotifyWorker sends one notification. A refusal (4xx) cancels the job: the
// same request would be refused again. A rate limit snoozes it for the
// delay the service asked for. A 5xx or no answer returns the error, and
// River retries with backoff.
type NotifyWorker struct {
	river.WorkerDefaults[NotifyArgs]
	sender  NotifySender
	log     *slog.Logger
	metrics *NotifyMetrics
}

// NewNotifyWorker returns a worker sending through sender. A nil logger
// discards; nil metrics are counted nowhere.
func NewNotifyWorker(sender NotifySender, logger *slog.Logger, metrics *NotifyMetrics) *NotifyWorker {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics = NewNotifyMetrics(nil)
	}
	return &NotifyWorker{sender: sender, log: logger, metrics: metrics}
}

// Timeout bounds one attempt, so a channel that hangs frees the worker.
func (w *NotifyWorker) Timeout(*river.Job[NotifyArgs]) time.Duration { return NotifyTimeout }

// Work sends the message and maps the answer onto River's outcomes.
func (w *NotifyWorker) Work(ctx context.Context, job *river.Job[NotifyArgs]) error {
	a := job.Args
	err := w.sender.Send(ctx, a.Channel, a.Message)
	if err == nil {
		w.count(a.Channel, notifySent)
		w.log.DebugContext(ctx, "notification sent", "channel", a.Channel, "event", a.Message.Event,
			"trace_id", a.Message.TraceID, "attempt", job.Attempt)
		return nil
	}
	// The error's text names the channel and never holds its token or
	// URL (notify.Error redacts them), so it is safe to log and for River
	// to store in the job's errors.
	attrs := []any{"channel", a.Channel, "event", a.Message.Event, "trace_id", a.Message.TraceID,
		"attempt", job.Attempt, "error", err}
	var nerr *notify.Error
	isNotify := errors.As(err, &nerr)
	switch {
	case isNotify && nerr.Permanent:
		w.count(a.Channel, notifyRefused)
		w.log.ErrorContext(ctx, "notification refused; dropped: check the channel's settings", attrs...)
		return river.JobCancel(err)
	case isNotify && nerr.RateLimited() && snoozes(job.Metadata) < NotifyMaxSnoozes:
		w.count(a.Channel, notifyRateLimited)
		w.log.WarnContext(ctx, "notification rate limited; waiting as asked",
			append(attrs, "retry_after", nerr.RetryAfter)...)
		return river.JobSnooze(nerr.RetryAfter)
	case job.Attempt >= job.MaxAttempts:
		w.count(a.Channel, notifyExhausted)
		w.log.ErrorContext(ctx, "notification failed on its last attempt; dropped", attrs...)
		return err
	default:
		w.count(a.Channel, notifyRetried)
		w.log.WarnContext(ctx, "notification failed; River retries", attrs...)
		return err
	}
}

func (w *NotifyWorker) count(channel, outcome string) {
	w.metrics.Notifications.WithLabelValues(channel, outcome).Inc()
}

// snoozes is how often River snoozed the job so far (its metadata's
// "snoozes").
func snoozes(metadata []byte) int {
	var m struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(metadata, &m)
	return m.Snoozes
}

// notifyHook returns the hook that queues ev's notification in the
// transaction recording it, through the River client working the job
// (nil when nothing would be queued).
func (n *Notifier) notifyHook(ev db.Event, venue, mode string, o exchange.Order) db.TxHook {
	if !n.Enabled(ev.Event) {
		return nil
	}
	msg := TraceMessage(ev, venue, mode, o)
	return func(ctx context.Context, tx pgx.Tx) error {
		client := river.ClientFromContext[pgx.Tx](ctx)
		return n.InsertTx(ctx, client, tx, msg)
	}
}
