package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Message is one event to report. It is stored in the notification job's
// arguments, so it holds only what the audit log holds: never a secret. Empty
// fields are left out of the text.
type Message struct {
	// Event is one of the Event constants.
	Event string `json:"event"`
	// TraceID is the signal's trace, when the event belongs to one.
	TraceID string `json:"trace_id,omitempty"`
	// Mode is the trace's mode; "test" marks the message so a testnet
	// rejection is not mistaken for a live one.
	Mode string `json:"mode,omitempty"`
	// Exchange, Symbol, Action and Quantity describe the order (Quantity as
	// the exact decimal string).
	Exchange string `json:"exchange,omitempty"`
	Symbol   string `json:"symbol,omitempty"`
	Action   string `json:"action,omitempty"`
	Quantity string `json:"quantity,omitempty"`
	// ClientOrderID is what to search for at the venue.
	ClientOrderID string `json:"client_order_id,omitempty"`
	// Engaged is the kill switch's new state (EventKillSwitch only).
	Engaged bool `json:"engaged,omitempty"`
	// By says who caused the event when a person did (the kill switch's
	// actor).
	By string `json:"by,omitempty"`
	// Detail is the reason: the venue's refusal, the reconcile's verdict,
	// the kill switch's reason.
	Detail string `json:"detail,omitempty"`
	// Time is when the event was recorded (not when it is delivered: a
	// retried notification may arrive late, and says so by its time).
	Time time.Time `json:"time"`
}

// Longest value shown, in characters: a venue's error text can be long, and
// Discord refuses a message over 2000 characters.
const (
	maxValue  = 200
	maxDetail = 1000
)

// Title is the message's first line, e.g. "hoox: order rejected (test)".
func (m Message) Title() string {
	var t string
	switch m.Event {
	case EventRejected:
		t = "order rejected"
	case EventReconciling:
		t = "venue answer lost, reconciling"
	case EventFailed:
		t = "trace failed"
	case EventReconciled:
		t = "trace reconciled"
	case EventDispatched:
		t = "order dispatched"
	case EventKillSwitch:
		t = "kill switch disengaged"
		if m.Engaged {
			t = "KILL SWITCH ENGAGED: no orders are sent"
		}
	case EventVenueCredentials:
		t = "venue refused hoox's API key"
	case EventOrderFilled:
		t = "order filled"
	case EventOrderCancelled:
		t = "order cancelled"
	case EventOrderExpired:
		t = "order expired"
	case EventOrderUnfollowed:
		t = "open order no longer followed"
	default:
		t = m.Event
	}
	if m.Mode == "test" {
		t += " (test)"
	}
	return "hoox: " + t
}

// field is one "label: value" line; code values (IDs) are shown verbatim in
// a monospace font so they can be copied.
type field struct {
	label, value string
	code         bool
}

// fields are the lines under the title, in a fixed order.
func (m Message) fields() []field {
	var fs []field
	add := func(label, value string, code bool) {
		if value = clean(value, maxValue); value != "" {
			fs = append(fs, field{label, value, code})
		}
	}
	if m.Symbol != "" {
		order := strings.Join(nonEmpty(m.Action, m.Quantity, m.Symbol), " ")
		if m.Exchange != "" {
			order += " on " + m.Exchange
		}
		add("order", order, false)
	} else {
		add("exchange", m.Exchange, false)
	}
	add("trace", m.TraceID, true)
	add("client order ID", m.ClientOrderID, true)
	add("by", m.By, false)
	if d := clean(m.Detail, maxDetail); d != "" {
		fs = append(fs, field{"reason", d, false})
	}
	if !m.Time.IsZero() {
		fs = append(fs, field{"time", m.Time.UTC().Format("2006-01-02 15:04:05.000 UTC"), false})
	}
	return fs
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// clean makes v one line of at most limit characters: a newline in a venue's
// error text must not start a markdown heading or quote in the message.
func clean(v string, limit int) string {
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.Join(strings.Fields(v), " ")
	if utf8.RuneCountInString(v) > limit {
		r := []rune(v)
		v = string(r[:limit-1]) + "…"
	}
	return v
}

// Text is the message as plain text, for logs and tests.
func (m Message) Text() string {
	var b strings.Builder
	b.WriteString(m.Title())
	for _, f := range m.fields() {
		fmt.Fprintf(&b, "\n%s: %s", f.label, f.value)
	}
	return b.String()
}

// telegramHTML renders m for Telegram's parse_mode HTML, which accepts only
// a few tags and fails the whole message on a stray '<' or '&': every value
// is escaped.
func (m Message) telegramHTML() string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace
	var b strings.Builder
	b.WriteString("<b>" + esc(m.Title()) + "</b>")
	for _, f := range m.fields() {
		v := esc(f.value)
		if f.code {
			v = "<code>" + v + "</code>"
		}
		b.WriteString("\n" + esc(f.label) + ": " + v)
	}
	return b.String()
}

// discordEscape backslash-escapes Discord's markdown so a symbol or a
// venue's reason cannot format (or link) the message.
func discordEscape(s string) string {
	return strings.NewReplacer(
		`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`", "|", `\|`,
		"[", `\[`, "]", `\]`, "(", `\(`, ")", `\)`, "<", `\<`, ">", `\>`, "#", `\#`, "@", `\@`,
	).Replace(s)
}

// discordMarkdown renders m for a Discord message's content.
func (m Message) discordMarkdown() string {
	var b strings.Builder
	b.WriteString("**" + discordEscape(m.Title()) + "**")
	for _, f := range m.fields() {
		v := discordEscape(f.value)
		if f.code {
			// Inside a code span nothing is formatted and backslashes
			// are literal; only a backtick could end it.
			v = "`" + strings.ReplaceAll(f.value, "`", "'") + "`"
		}
		b.WriteString("\n" + f.label + ": " + v)
	}
	return b.String()
}

// slackMrkdwn renders m for Slack's mrkdwn. Slack requires &, < and > to be
// escaped: "<...>" is its syntax for links and @channel mentions.
func (m Message) slackMrkdwn() string {
	esc := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace
	var b strings.Builder
	b.WriteString("*" + esc(m.Title()) + "*")
	for _, f := range m.fields() {
		v := esc(f.value)
		if f.code {
			v = "`" + strings.ReplaceAll(v, "`", "'") + "`"
		}
		b.WriteString("\n" + f.label + ": " + v)
	}
	return b.String()
}

// telegramPayload is sendMessage's body.
type telegramPayload struct {
	ChatID             string                 `json:"chat_id"`
	Text               string                 `json:"text"`
	ParseMode          string                 `json:"parse_mode"`
	LinkPreviewOptions telegramPreviewOptions `json:"link_preview_options"`
}

type telegramPreviewOptions struct {
	IsDisabled bool `json:"is_disabled"`
}

// discordPayload is a webhook execution's body. allowed_mentions with no
// parse types keeps "@everyone" in a venue's text from pinging anyone.
type discordPayload struct {
	Content         string                 `json:"content"`
	AllowedMentions discordAllowedMentions `json:"allowed_mentions"`
}

type discordAllowedMentions struct {
	Parse []string `json:"parse"`
}

// slackPayload is an incoming webhook's body.
type slackPayload struct {
	Text        string `json:"text"`
	UnfurlLinks bool   `json:"unfurl_links"`
	UnfurlMedia bool   `json:"unfurl_media"`
}

// Payload is the JSON body channel's service expects for m. chatID is
// Telegram's chat (ignored for the webhooks).
func Payload(channel, chatID string, m Message) ([]byte, error) {
	var v any
	switch channel {
	case ChannelTelegram:
		v = telegramPayload{ChatID: chatID, Text: m.telegramHTML(), ParseMode: "HTML",
			LinkPreviewOptions: telegramPreviewOptions{IsDisabled: true}}
	case ChannelDiscord:
		v = discordPayload{Content: m.discordMarkdown(), AllowedMentions: discordAllowedMentions{Parse: []string{}}}
	case ChannelSlack:
		v = slackPayload{Text: m.slackMrkdwn()}
	default:
		return nil, fmt.Errorf("unknown channel %q", channel)
	}
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s message: %w", channel, err)
	}
	return body, nil
}
