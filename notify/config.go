// Package notify tells an operator about events that need a human: an order
// the venue refused, a trace whose answer was lost, a trace that failed, the
// kill switch changing, a venue refusing hoox's API key. It posts one short
// message per event to Telegram, a Discord webhook or a Slack incoming
// webhook, each a single HTTPS POST.
//
// The package only formats and sends; delivery (at least once, retried,
// committed with the event it reports) is the jobs package's River job, so a
// dead channel never slows or fails a signal.
package notify

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/hoox/hoox/internal/confcheck"
)

// Event names a kind of notification, as listed in HOOX_NOTIFY_EVENTS. They
// are the audit events an operator acts on, plus the two that are not
// tied to a trace (kill switch, venue credentials).
const (
	// EventRejected: the venue refused an order.
	EventRejected = "rejected"
	// EventReconciling: the venue's answer was lost; a reconcile job will
	// ask the venue what became of the order.
	EventReconciling = "reconciling"
	// EventFailed: a trace ended without an order it can vouch for (stale
	// signal, venue unreachable through every reconcile attempt).
	EventFailed = "failed"
	// EventReconciled: a reconcile settled a trace (optional: it follows
	// every reconciling one).
	EventReconciled = "reconciled"
	// EventDispatched: an order was placed (optional: one per signal is a
	// lot of messages).
	EventDispatched = "dispatched"
	// EventKillSwitch: the kill switch was engaged or disengaged.
	EventKillSwitch = "kill_switch"
	// EventVenueCredentials: a venue refused hoox's API key or signature,
	// so every order to it fails until someone fixes the key.
	EventVenueCredentials = "venue_credentials"
	// EventOrderFilled: an order hoox followed after placing it (a
	// resting limit order, a market order still executing, an exit placed
	// as its own order that triggered) filled completely.
	EventOrderFilled = "order_filled"
	// EventOrderCancelled: a followed order was cancelled (by a cancel
	// signal, by hand or by the venue) before it filled completely.
	EventOrderCancelled = "order_cancelled"
	// EventOrderExpired: the venue ended a followed order on its own
	// before it filled completely.
	EventOrderExpired = "order_expired"
	// EventOrderUnfollowed: an order still open is no longer followed,
	// so a fill from now on is not recorded (nor are the exits it plans
	// placed): an exit at its 80-day horizon, an entry once its trace is
	// purged or released. The venue may still hold it.
	EventOrderUnfollowed = "order_unfollowed"
)

// Channel names a notification service; it is what a job records, never the
// token or URL that reaches it.
const (
	ChannelTelegram = "telegram"
	ChannelDiscord  = "discord"
	ChannelSlack    = "slack"
)

// DefaultTelegramBaseURL is Telegram's Bot API; tests point
// Config.TelegramBaseURL at a fake instead.
const DefaultTelegramBaseURL = "https://api.telegram.org"

// DefaultTimeout bounds one POST when Config.HTTPClient is not given: a
// channel that hangs must not hold a worker for long.
const DefaultTimeout = 10 * time.Second

// AllEvents lists every event a notification can report, in the order the
// documentation gives them.
func AllEvents() []string {
	return []string{EventRejected, EventReconciling, EventFailed, EventKillSwitch, EventVenueCredentials,
		EventOrderFilled, EventOrderUnfollowed, EventReconciled, EventDispatched, EventOrderCancelled, EventOrderExpired}
}

// DefaultEvents are the events sent when HOOX_NOTIFY_EVENTS is not set: the
// ones that need a human, and the fill of an order hoox followed (a limit
// order resting until the price came: the trader waits for that news),
// and an open order no longer followed (someone must watch it by hand).
// Dispatched and reconciled orders are routine.
func DefaultEvents() []string {
	return []string{EventRejected, EventReconciling, EventFailed, EventKillSwitch, EventVenueCredentials, EventOrderFilled,
		EventOrderUnfollowed}
}

// Config says where notifications go and which events are sent. A channel is
// on when its credentials are set; with none set, nothing is sent and
// nothing is queued.
//
// The token and webhook URLs are secrets: whoever holds them can post as
// hoox. They never appear in errors, logs or stored jobs.
type Config struct {
	// TelegramBotToken is the bot's token from BotFather
	// (HOOX_TELEGRAM_BOT_TOKEN); it needs TelegramChatID.
	TelegramBotToken string
	// TelegramChatID is the chat, group or channel the bot posts to
	// (HOOX_TELEGRAM_CHAT_ID): a number (negative for groups) or
	// @channelname.
	TelegramChatID string
	// DiscordWebhookURL is a Discord channel's webhook
	// (HOOX_DISCORD_WEBHOOK_URL).
	DiscordWebhookURL string
	// SlackWebhookURL is a Slack incoming webhook (HOOX_SLACK_WEBHOOK_URL).
	SlackWebhookURL string
	// Events are the events sent (HOOX_NOTIFY_EVENTS, see ParseEvents).
	// Nil means DefaultEvents; an empty, non-nil slice sends none.
	Events []string
	// HTTPClient sends the POSTs; nil means one with DefaultTimeout. Its
	// redirects are never followed: a webhook that redirects is
	// misconfigured, and following it could carry the message elsewhere.
	HTTPClient *http.Client
	// TelegramBaseURL is the Bot API's base URL; empty means
	// DefaultTelegramBaseURL.
	TelegramBaseURL string
}

// WithDefaults returns c with the defaults filled in, leaving c unchanged.
func (c Config) WithDefaults() Config {
	if c.Events == nil {
		c.Events = DefaultEvents()
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: DefaultTimeout}
	}
	if c.TelegramBaseURL == "" {
		c.TelegramBaseURL = DefaultTelegramBaseURL
	}
	return c
}

// Validate refuses a configuration that would fail at the first event rather
// than at start: half a Telegram setup, a webhook URL that is not one, an
// event name that does not exist. Its errors are *confcheck.Error values
// naming the field (Config "notify"), all of them joined, as every
// package's Validate; the token and the URLs are secrets, so a refusal
// never quotes them.
func (c Config) Validate() error {
	ck := confcheck.New("notify")
	switch {
	case c.TelegramBotToken != "" && c.TelegramChatID == "":
		ck.Refuse("TelegramChatID", "", "is required with a Telegram bot token")
	case c.TelegramBotToken == "" && c.TelegramChatID != "":
		ck.Refuse("TelegramBotToken", "", "is required with a Telegram chat ID")
	}
	if c.TelegramBotToken != "" && strings.ContainsAny(c.TelegramBotToken, "/?#% \t\r\n") {
		// The token goes into the URL's path; these would change the URL.
		ck.Refuse("TelegramBotToken", "", "is not a bot token (it holds characters such as '/', '?' or spaces)")
	}
	for _, u := range []struct{ field, url string }{
		{"TelegramBaseURL", c.TelegramBaseURL},
		{"DiscordWebhookURL", c.DiscordWebhookURL},
		{"SlackWebhookURL", c.SlackWebhookURL},
	} {
		if u.url == "" {
			continue
		}
		if err := checkURL(u.url); err != nil {
			ck.Refuse(u.field, "", err.Error())
		}
	}
	for _, e := range c.Events {
		if !slices.Contains(AllEvents(), e) {
			ck.Refuse("Events", e, "is not an event; known: "+strings.Join(AllEvents(), ", "))
		}
	}
	return ck.Err()
}

// checkURL accepts an absolute https URL, or plain http to a loopback
// address (a local relay, the tests' fakes). Its errors never quote the URL:
// a webhook URL is a secret.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("is not a URL")
	}
	switch {
	case u.Host == "":
		return errors.New("is not an absolute URL")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	default:
		return errors.New("must be an https URL")
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Channels lists the configured channels in a fixed order; one job is queued
// per channel and event, so a dead channel does not hold back the others.
func (c Config) Channels() []string {
	var out []string
	if c.TelegramBotToken != "" && c.TelegramChatID != "" {
		out = append(out, ChannelTelegram)
	}
	if c.DiscordWebhookURL != "" {
		out = append(out, ChannelDiscord)
	}
	if c.SlackWebhookURL != "" {
		out = append(out, ChannelSlack)
	}
	return out
}

// Enabled says whether event is sent (nil Events meaning the defaults).
func (c Config) Enabled(event string) bool {
	events := c.Events
	if events == nil {
		events = DefaultEvents()
	}
	return slices.Contains(events, event)
}

// ParseEvents reads HOOX_NOTIFY_EVENTS: a comma-separated list of event
// names, spaces ignored. Empty means DefaultEvents, "all" every event, and
// "none" no event at all (channels stay configured but silent). An unknown
// name is an error that lists the known ones.
func ParseEvents(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "":
		return DefaultEvents(), nil
	case "all":
		return AllEvents(), nil
	case "none":
		return []string{}, nil
	}
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		e := strings.ToLower(strings.TrimSpace(part))
		if e == "" {
			continue
		}
		// "kill switch" and "kill-switch" read naturally; accept them.
		e = strings.NewReplacer("-", "_", " ", "_").Replace(e)
		if !slices.Contains(AllEvents(), e) {
			return nil, fmt.Errorf("HOOX_NOTIFY_EVENTS: unknown event %q (known: %s; or all, none)", e, strings.Join(AllEvents(), ", "))
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	if out == nil {
		return []string{}, nil
	}
	return out, nil
}
