// Package notifyfake is an httptest stand-in for the three notification
// services: Telegram's sendMessage, a Discord webhook and a Slack incoming
// webhook. It records every request, checks what the real services check
// (the token, the chat, Telegram's HTML entities, Discord's length limit),
// and answers from a script so tests can make a channel slow down (429),
// fail (5xx) or refuse (4xx).
package notifyfake

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hoox/hoox/notify"
)

// Reply is a scripted answer. The fake renders it in the channel's own
// shape: Telegram's {"ok":false,...,"parameters":{"retry_after":N}},
// Discord's {"message":...,"retry_after":1.5}, Slack's plain text, each with
// a Retry-After header on 429.
type Reply struct {
	// Status is the HTTP status; 0 answers as the service does when it
	// takes the message.
	Status int
	// RetryAfter is the delay a 429 asks for.
	RetryAfter time.Duration
	// Description is the refusal's text.
	Description string
}

// OK takes the message.
func OK() Reply { return Reply{} }

// RateLimited answers 429 asking to wait d.
func RateLimited(d time.Duration) Reply {
	return Reply{Status: http.StatusTooManyRequests, RetryAfter: d, Description: "Too Many Requests"}
}

// ServerError answers 500.
func ServerError() Reply {
	return Reply{Status: http.StatusInternalServerError, Description: "Internal Server Error"}
}

// Refused answers a 4xx with the service's explanation.
func Refused(status int, description string) Reply {
	return Reply{Status: status, Description: description}
}

// Request is one request the fake received.
type Request struct {
	// Channel is the service addressed (notify.ChannelTelegram, ...), or
	// "" for a path none of them serves.
	Channel string
	Method  string
	Path    string
	Header  http.Header
	Body    []byte
}

// JSON decodes the body into a map; nil when it is not a JSON object.
func (r Request) JSON() map[string]any {
	var m map[string]any
	if json.Unmarshal(r.Body, &m) != nil {
		return nil
	}
	return m
}

// Text is the message's text: Telegram's text, Discord's content, Slack's
// text.
func (r Request) Text() string {
	key := "text"
	if r.Channel == notify.ChannelDiscord {
		key = "content"
	}
	s, _ := r.JSON()[key].(string)
	return s
}

// Server is the fake. Its secrets are random per server, so a test can
// search logs and errors for them.
type Server struct {
	srv         *httptest.Server
	token       string
	chatID      string
	discordPath string
	slackPath   string

	mu       sync.Mutex
	script   map[string][]Reply
	requests []Request
	changed  chan struct{}
	messages int
}

// New starts a fake that t closes when it ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		token:       "123456789:" + random(t, 18),
		chatID:      "-100" + strconv.Itoa(int(time.Now().UnixNano()%1e9)),
		discordPath: "/api/webhooks/1234567890123/" + random(t, 32),
		slackPath:   "/services/T0FAKE/B0FAKE/" + random(t, 12),
		script:      map[string][]Reply{},
		changed:     make(chan struct{}),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func random(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("notifyfake: random: %v", err)
	}
	return hex.EncodeToString(b)
}

// Config is a notify.Config with all three channels pointed at the fake and
// every event enabled.
func (s *Server) Config() notify.Config {
	return notify.Config{
		TelegramBotToken:  s.token,
		TelegramChatID:    s.chatID,
		DiscordWebhookURL: s.srv.URL + s.discordPath,
		SlackWebhookURL:   s.srv.URL + s.slackPath,
		TelegramBaseURL:   s.srv.URL,
		Events:            notify.AllEvents(),
	}
}

// Secrets are the strings that must never appear in a log or an error: the
// bot token and the webhooks' secret path parts.
func (s *Server) Secrets() []string {
	return []string{s.token, s.discordPath, s.slackPath,
		s.discordPath[strings.LastIndex(s.discordPath, "/")+1:], s.slackPath[strings.LastIndex(s.slackPath, "/")+1:]}
}

// URL is the fake's base URL.
func (s *Server) URL() string { return s.srv.URL }

// ChatID is the only chat the fake Telegram delivers to.
func (s *Server) ChatID() string { return s.chatID }

// Script queues replies for channel's next requests, in order; once they
// are used up the channel takes every message.
func (s *Server) Script(channel string, replies ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script[channel] = append(s.script[channel], replies...)
}

// Requests are the requests channel received so far, oldest first (all
// channels' when channel is "").
func (s *Server) Requests(channel string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if channel == "" || r.Channel == channel {
			out = append(out, r)
		}
	}
	return out
}

// Await waits until channel has received n requests and returns them; it
// fails the test after 30 seconds.
func (s *Server) Await(t testing.TB, channel string, n int) []Request {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		if got := s.Requests(channel); len(got) >= n {
			return got
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("notifyfake: %s received %d requests, want %d", channel, len(s.Requests(channel)), n)
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
	switch {
	case strings.HasPrefix(r.URL.Path, "/bot"):
		req.Channel = notify.ChannelTelegram
	case strings.HasPrefix(r.URL.Path, "/api/webhooks/"):
		req.Channel = notify.ChannelDiscord
	case strings.HasPrefix(r.URL.Path, "/services/"):
		req.Channel = notify.ChannelSlack
	}

	s.mu.Lock()
	s.requests = append(s.requests, req)
	close(s.changed)
	s.changed = make(chan struct{})
	var reply *Reply
	if q := s.script[req.Channel]; len(q) > 0 {
		reply, s.script[req.Channel] = &q[0], q[1:]
	}
	s.messages++
	id := s.messages
	s.mu.Unlock()

	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch req.Channel {
	case notify.ChannelTelegram:
		s.telegram(w, req, reply, id)
	case notify.ChannelDiscord:
		s.discord(w, req, reply)
	case notify.ChannelSlack:
		s.slack(w, req, reply)
	default:
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// retryHeader is Retry-After in whole seconds, rounded up.
func retryHeader(w http.ResponseWriter, d time.Duration) int {
	secs := int(math.Ceil(d.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	return secs
}

func (s *Server) telegram(w http.ResponseWriter, req Request, reply *Reply, id int) {
	refuse := func(status int, description string, params map[string]any) {
		v := map[string]any{"ok": false, "error_code": status, "description": description}
		if params != nil {
			v["parameters"] = params
		}
		writeJSON(w, status, v)
	}
	if reply != nil && reply.Status != 0 {
		if reply.Status == http.StatusTooManyRequests {
			secs := retryHeader(w, reply.RetryAfter)
			refuse(reply.Status, fmt.Sprintf("Too Many Requests: retry after %d", secs), map[string]any{"retry_after": secs})
			return
		}
		refuse(reply.Status, reply.Description, nil)
		return
	}
	if req.Path != "/bot"+s.token+"/sendMessage" {
		if strings.HasPrefix(req.Path, "/bot"+s.token+"/") {
			refuse(http.StatusNotFound, "Not Found", nil)
			return
		}
		refuse(http.StatusUnauthorized, "Unauthorized", nil)
		return
	}
	var p struct {
		ChatID    json.RawMessage `json:"chat_id"`
		Text      string          `json:"text"`
		ParseMode string          `json:"parse_mode"`
	}
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") || json.Unmarshal(req.Body, &p) != nil {
		refuse(http.StatusBadRequest, "Bad Request: message text is empty", nil)
		return
	}
	chat := strings.Trim(string(p.ChatID), `"`)
	switch {
	case chat == "":
		refuse(http.StatusBadRequest, "Bad Request: chat_id is empty", nil)
	case chat != s.chatID:
		refuse(http.StatusBadRequest, "Bad Request: chat not found", nil)
	case strings.TrimSpace(p.Text) == "":
		refuse(http.StatusBadRequest, "Bad Request: message text is empty", nil)
	case utf8.RuneCountInString(p.Text) > 4096:
		refuse(http.StatusBadRequest, "Bad Request: message is too long", nil)
	case p.ParseMode == "HTML" && telegramHTMLError(p.Text) != "":
		refuse(http.StatusBadRequest, "Bad Request: can't parse entities: "+telegramHTMLError(p.Text), nil)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "result": map[string]any{
			"message_id": id, "date": time.Now().Unix(), "chat": map[string]any{"id": chat}, "text": p.Text}})
	}
}

// Telegram's HTML mode accepts a few tags and entities; anything else that
// starts with '<' or '&' fails the message.
var (
	telegramTag    = regexp.MustCompile(`^</?(b|strong|i|em|u|ins|s|strike|del|code|pre|tg-spoiler|blockquote)>`)
	telegramEntity = regexp.MustCompile(`^&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);`)
)

func telegramHTMLError(text string) string {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '<':
			if !telegramTag.MatchString(text[i:]) {
				return fmt.Sprintf("unsupported start tag at byte offset %d", i)
			}
		case '&':
			if !telegramEntity.MatchString(text[i:]) {
				return fmt.Sprintf("unsupported entity at byte offset %d", i)
			}
		}
	}
	return ""
}

func (s *Server) discord(w http.ResponseWriter, req Request, reply *Reply) {
	refuse := func(status, code int, message string) {
		writeJSON(w, status, map[string]any{"message": message, "code": code})
	}
	if reply != nil && reply.Status != 0 {
		if reply.Status == http.StatusTooManyRequests {
			retryHeader(w, reply.RetryAfter)
			writeJSON(w, reply.Status, map[string]any{"message": "You are being rate limited.",
				"retry_after": reply.RetryAfter.Seconds(), "global": false})
			return
		}
		refuse(reply.Status, 0, reply.Description)
		return
	}
	if req.Path != s.discordPath {
		if strings.HasPrefix(req.Path, s.discordPath[:strings.LastIndex(s.discordPath, "/")+1]) {
			refuse(http.StatusUnauthorized, 50027, "Invalid Webhook Token")
			return
		}
		refuse(http.StatusNotFound, 10015, "Unknown Webhook")
		return
	}
	var p struct {
		Content string `json:"content"`
	}
	if !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") || json.Unmarshal(req.Body, &p) != nil {
		refuse(http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	switch {
	case strings.TrimSpace(p.Content) == "":
		refuse(http.StatusBadRequest, 50006, "Cannot send an empty message")
	case utf8.RuneCountInString(p.Content) > 2000:
		refuse(http.StatusBadRequest, 50035, "Invalid Form Body")
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) slack(w http.ResponseWriter, req Request, reply *Reply) {
	refuse := func(status int, text string) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text)
	}
	if reply != nil && reply.Status != 0 {
		if reply.Status == http.StatusTooManyRequests {
			retryHeader(w, reply.RetryAfter)
			refuse(reply.Status, "rate_limited")
			return
		}
		refuse(reply.Status, reply.Description)
		return
	}
	if req.Path != s.slackPath {
		refuse(http.StatusForbidden, "invalid_token")
		return
	}
	var p struct {
		Text string `json:"text"`
	}
	switch {
	case json.Unmarshal(req.Body, &p) != nil:
		refuse(http.StatusBadRequest, "invalid_payload")
	case strings.TrimSpace(p.Text) == "":
		refuse(http.StatusBadRequest, "no_text")
	default:
		refuse(http.StatusOK, "ok")
	}
}
