package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds on a rate limit's delay: a service that asks for no delay (or
// gives none) is asked again after DefaultRetryAfter; one that asks for more
// than MaxRetryAfter is asked again then.
const (
	DefaultRetryAfter = 30 * time.Second
	MaxRetryAfter     = time.Hour
)

// Client posts messages to the configured channels. It is safe for
// concurrent use.
type Client struct {
	cfg     Config
	http    *http.Client
	secrets []string
}

// New returns a client for cfg (defaults filled in), or cfg's validation
// error.
func New(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// A copy, so the caller's client keeps its redirect policy.
	hc := *cfg.HTTPClient
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{cfg: cfg, http: &hc, secrets: secretsOf(cfg)}, nil
}

// Channels lists the configured channels.
func (c *Client) Channels() []string { return c.cfg.Channels() }

// Error is a delivery that did not succeed, classified so the job knows
// whether and when to try again. Its text never holds the bot token or a
// webhook URL.
type Error struct {
	// Channel is the service that failed.
	Channel string
	// StatusCode is the HTTP status; 0 when no answer came (transport
	// error, timeout).
	StatusCode int
	// Permanent means trying again cannot help: the service refused the
	// request itself (bad token, deleted webhook, unknown chat).
	Permanent bool
	// RetryAfter is how long the service asked to wait (429 only).
	RetryAfter time.Duration

	msg   string
	cause error
}

func (e *Error) Error() string { return "notify " + e.Channel + ": " + e.msg }

// Unwrap exposes only context.Canceled or context.DeadlineExceeded, so
// errors.Is sees a cancelled send; the transport's own error is not kept,
// since its text holds the request's URL.
func (e *Error) Unwrap() error { return e.cause }

// RateLimited says whether the service asked to slow down.
func (e *Error) RateLimited() bool { return e.StatusCode == http.StatusTooManyRequests }

// Send posts msg to channel. A nil error means the service took the message.
// Otherwise the error is an *Error: Permanent (a 4xx other than 408 and 429,
// a redirect, a channel this client does not have), rate limited (429, with
// RetryAfter), or temporary (5xx, 408, no answer).
func (c *Client) Send(ctx context.Context, channel string, msg Message) error {
	endpoint, err := c.endpoint(channel)
	if err != nil {
		return err
	}
	body, err := Payload(channel, c.cfg.TelegramChatID, msg)
	if err != nil {
		return &Error{Channel: channel, Permanent: true, msg: err.Error()}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return &Error{Channel: channel, Permanent: true, msg: "build request: " + c.redact(err.Error())}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "hoox-notify")
	resp, err := c.http.Do(req)
	if err != nil {
		return &Error{Channel: channel, msg: c.transportError(channel, err), cause: contextCause(err)}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	// Drain a little more so the connection can be reused.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))

	code := resp.StatusCode
	if code >= 200 && code < 300 {
		return nil
	}
	e := &Error{Channel: channel, StatusCode: code,
		msg: fmt.Sprintf("status %d: %s", code, c.redact(describe(channel, answer)))}
	switch {
	case code == http.StatusTooManyRequests:
		e.RetryAfter = retryAfter(channel, resp.Header, answer, time.Now())
	case code >= 500, code == http.StatusRequestTimeout:
	default:
		e.Permanent = true
	}
	return e
}

// endpoint is channel's URL, or a permanent error for a channel that is not
// configured here (a job queued before its channel was removed).
func (c *Client) endpoint(channel string) (string, error) {
	if !slices.Contains(c.cfg.Channels(), channel) {
		return "", &Error{Channel: channel, Permanent: true, msg: "channel not configured"}
	}
	switch channel {
	case ChannelTelegram:
		return strings.TrimSuffix(c.cfg.TelegramBaseURL, "/") + "/bot" + c.cfg.TelegramBotToken + "/sendMessage", nil
	case ChannelDiscord:
		return c.cfg.DiscordWebhookURL, nil
	default:
		return c.cfg.SlackWebhookURL, nil
	}
}

// transportError describes a failed round trip without its URL: net/http's
// *url.Error quotes the whole URL, which holds the bot token or the
// webhook's secret path.
func (c *Client) transportError(channel string, err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %s endpoint: %s", ue.Op, channel, c.redact(ue.Err.Error()))
	}
	return c.redact(err.Error())
}

func contextCause(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	}
	return nil
}

// redacted replaces a secret wherever it appears.
const redacted = "[redacted]"

// secretsOf lists every form in which cfg's secrets could appear in an error
// text: the token, each webhook URL as given and as net/http prints it, its
// path, and its long path segments (a webhook's token part), longest first
// so a longer match wins.
func secretsOf(cfg Config) []string {
	var s []string
	add := func(v string) {
		if len(v) >= 8 && !slices.Contains(s, v) {
			s = append(s, v)
		}
	}
	add(cfg.TelegramBotToken)
	add(url.PathEscape(cfg.TelegramBotToken))
	for _, raw := range []string{cfg.DiscordWebhookURL, cfg.SlackWebhookURL} {
		if raw == "" {
			continue
		}
		add(raw)
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		add(u.String())
		add(u.EscapedPath())
		add(u.Path)
		add(u.RawQuery)
		for seg := range strings.SplitSeq(u.Path, "/") {
			if len(seg) >= 16 {
				add(seg)
			}
		}
	}
	slices.SortFunc(s, func(a, b string) int { return len(b) - len(a) })
	return s
}

func (c *Client) redact(text string) string {
	for _, s := range c.secrets {
		text = strings.ReplaceAll(text, s, redacted)
	}
	return text
}

// describe is the service's own explanation of a refusal, shortened:
// Telegram's "description", Discord's "message", Slack's plain-text code.
func describe(channel string, answer []byte) string {
	var v struct {
		Description string `json:"description"`
		Message     string `json:"message"`
		Parameters  struct {
			MigrateToChatID int64 `json:"migrate_to_chat_id"`
		} `json:"parameters"`
	}
	text := ""
	if json.Unmarshal(answer, &v) == nil {
		switch {
		case channel == ChannelTelegram && v.Parameters.MigrateToChatID != 0:
			// The group became a supergroup with a new ID: say what
			// to set, as Telegram does not deliver to the old one.
			text = fmt.Sprintf("%s (the group is now chat %d: set HOOX_TELEGRAM_CHAT_ID to it)",
				v.Description, v.Parameters.MigrateToChatID)
		case v.Description != "":
			text = v.Description
		case v.Message != "":
			text = v.Message
		}
	}
	if text == "" {
		text = string(answer)
	}
	text = clean(text, maxValue)
	if text == "" {
		text = "no explanation given"
	}
	return text
}

// retryAfter reads a 429's delay: Telegram's parameters.retry_after
// (seconds), Discord's retry_after (fractional seconds), else the
// Retry-After header (seconds or an HTTP date; Slack and both others send
// it). It is clamped to (0, MaxRetryAfter], DefaultRetryAfter when absent.
func retryAfter(channel string, h http.Header, answer []byte, now time.Time) time.Duration {
	var d time.Duration
	var v struct {
		RetryAfter *float64 `json:"retry_after"`
		Parameters struct {
			RetryAfter *float64 `json:"retry_after"`
		} `json:"parameters"`
	}
	if json.Unmarshal(answer, &v) == nil {
		switch {
		case channel == ChannelTelegram && v.Parameters.RetryAfter != nil:
			d = seconds(*v.Parameters.RetryAfter)
		case channel == ChannelDiscord && v.RetryAfter != nil:
			d = seconds(*v.RetryAfter)
		}
	}
	if d <= 0 {
		if ra := strings.TrimSpace(h.Get("Retry-After")); ra != "" {
			if f, err := strconv.ParseFloat(ra, 64); err == nil {
				d = seconds(f)
			} else if t, err := http.ParseTime(ra); err == nil {
				d = t.Sub(now)
			}
		}
	}
	switch {
	case d <= 0:
		return DefaultRetryAfter
	case d > MaxRetryAfter:
		return MaxRetryAfter
	}
	return d
}

func seconds(f float64) time.Duration {
	if math.IsNaN(f) || f <= 0 {
		return 0
	}
	if f > MaxRetryAfter.Seconds() {
		return MaxRetryAfter
	}
	return time.Duration(f * float64(time.Second))
}
