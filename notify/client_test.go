package notify_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/notify"
	"github.com/hoox/hoox/notify/notifyfake"
)

type testBundle struct {
	fake   *notifyfake.Server
	client *notify.Client
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	fake := notifyfake.New(t)
	client, err := notify.New(fake.Config())
	require.NoError(t, err)
	return &testBundle{fake: fake, client: client}
}

// rejected is a rejection whose venue reason is hostile to every markup:
// HTML, markdown, mentions, links and a newline.
func rejected() notify.Message {
	return notify.Message{
		Event: notify.EventRejected, TraceID: "tv-<1>&2", Mode: "live",
		Exchange: "binance", Symbol: "BTCUSDT", Action: "buy", Quantity: "0.015",
		ClientOrderID: "hx_abc`1",
		Detail:        "insufficient balance & <b>margin</b> @everyone <!channel> *bold* [link](https://evil.example)\n# heading",
		Time:          time.Date(2025, 3, 4, 5, 6, 7, 890_000_000, time.UTC),
	}
}

func TestSendTelegram(t *testing.T) {
	t.Parallel()
	b := setup(t)

	require.NoError(t, b.client.Send(context.Background(), notify.ChannelTelegram, rejected()))

	reqs := b.fake.Requests(notify.ChannelTelegram)
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	body := r.JSON()
	require.Equal(t, b.fake.ChatID(), body["chat_id"])
	require.Equal(t, "HTML", body["parse_mode"])
	require.Equal(t, map[string]any{"is_disabled": true}, body["link_preview_options"])
	// The fake, like Telegram, refuses a stray '<' or '&': it took this one.
	require.Equal(t, "<b>hoox: order rejected</b>\n"+
		"order: buy 0.015 BTCUSDT on binance\n"+
		"trace: <code>tv-&lt;1&gt;&amp;2</code>\n"+
		"client order ID: <code>hx_abc`1</code>\n"+
		"reason: insufficient balance &amp; &lt;b&gt;margin&lt;/b&gt; @everyone &lt;!channel&gt; *bold* [link](https://evil.example) # heading\n"+
		"time: 2025-03-04 05:06:07.890 UTC", r.Text())
}

func TestSendDiscord(t *testing.T) {
	t.Parallel()
	b := setup(t)

	require.NoError(t, b.client.Send(context.Background(), notify.ChannelDiscord, rejected()))

	reqs := b.fake.Requests(notify.ChannelDiscord)
	require.Len(t, reqs, 1)
	body := reqs[0].JSON()
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
	require.Equal(t, map[string]any{"parse": []any{}}, body["allowed_mentions"], "no @everyone ping from a venue's text")
	require.Equal(t, "**hoox: order rejected**\n"+
		"order: buy 0.015 BTCUSDT on binance\n"+
		"trace: `tv-<1>&2`\n"+
		"client order ID: `hx_abc'1`\n"+
		`reason: insufficient balance & \<b\>margin\</b\> \@everyone \<!channel\> \*bold\* \[link\]\(https://evil.example\) \# heading`+"\n"+
		"time: 2025-03-04 05:06:07.890 UTC", reqs[0].Text())
}

func TestSendSlack(t *testing.T) {
	t.Parallel()
	b := setup(t)

	require.NoError(t, b.client.Send(context.Background(), notify.ChannelSlack, rejected()))

	reqs := b.fake.Requests(notify.ChannelSlack)
	require.Len(t, reqs, 1)
	require.Equal(t, "application/json", reqs[0].Header.Get("Content-Type"))
	require.Equal(t, "*hoox: order rejected*\n"+
		"order: buy 0.015 BTCUSDT on binance\n"+
		"trace: `tv-&lt;1&gt;&amp;2`\n"+
		"client order ID: `hx_abc'1`\n"+
		"reason: insufficient balance &amp; &lt;b&gt;margin&lt;/b&gt; @everyone &lt;!channel&gt; *bold* [link](https://evil.example) # heading\n"+
		"time: 2025-03-04 05:06:07.890 UTC", reqs[0].Text())
}

func TestTitles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msg  notify.Message
		want string
	}{
		{notify.Message{Event: notify.EventRejected, Mode: "test"}, "hoox: order rejected (test)"},
		{notify.Message{Event: notify.EventReconciling}, "hoox: venue answer lost, reconciling"},
		{notify.Message{Event: notify.EventFailed}, "hoox: trace failed"},
		{notify.Message{Event: notify.EventReconciled}, "hoox: trace reconciled"},
		{notify.Message{Event: notify.EventDispatched}, "hoox: order dispatched"},
		{notify.Message{Event: notify.EventKillSwitch, Engaged: true}, "hoox: KILL SWITCH ENGAGED: no orders are sent"},
		{notify.Message{Event: notify.EventKillSwitch}, "hoox: kill switch disengaged"},
		{notify.Message{Event: notify.EventVenueCredentials}, "hoox: venue refused hoox's API key"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.msg.Title())
	}
	// A message without an order names the exchange and who acted.
	ks := notify.Message{Event: notify.EventKillSwitch, Engaged: true, By: "admin from 10.0.0.7", Detail: "exchange maintenance"}
	require.Equal(t, "hoox: KILL SWITCH ENGAGED: no orders are sent\nby: admin from 10.0.0.7\nreason: exchange maintenance", ks.Text())
	cred := notify.Message{Event: notify.EventVenueCredentials, Exchange: "bybit", Detail: "10003: API key is invalid"}
	require.Equal(t, "hoox: venue refused hoox's API key\nexchange: bybit\nreason: 10003: API key is invalid", cred.Text())
}

func TestLongDetailFitsEveryChannel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	msg := rejected()
	// Markup doubles in size when escaped; Discord refuses over 2000
	// characters and the fake checks it.
	msg.Detail = strings.Repeat("<&*", 3000)
	for _, ch := range b.client.Channels() {
		require.NoError(t, b.client.Send(context.Background(), ch, msg), ch)
	}
	require.Contains(t, b.fake.Requests(notify.ChannelSlack)[0].Text(), "…")
}

// The format tests rely on the fake refusing what Telegram refuses.
func TestFakeTelegramRefusesBadHTML(t *testing.T) {
	t.Parallel()
	fake := notifyfake.New(t)
	cfg := fake.Config()
	for _, text := range []string{"a < b", "fish & chips", "<script>x</script>"} {
		body := `{"chat_id":"` + fake.ChatID() + `","parse_mode":"HTML","text":` + quote(text) + `}`
		resp, err := http.Post(cfg.TelegramBaseURL+"/bot"+cfg.TelegramBotToken+"/sendMessage", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, text)
	}
}

func quote(s string) string {
	var b bytes.Buffer
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	b.WriteByte('"')
	return b.String()
}

func TestSendClassifiesAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		channel       string
		reply         notifyfake.Reply
		wantStatus    int
		wantPermanent bool
		wantRetry     time.Duration
		wantText      string
	}{
		// Telegram says parameters.retry_after in whole seconds.
		{"telegram 429", notify.ChannelTelegram, notifyfake.RateLimited(7 * time.Second), 429, false, 7 * time.Second, "Too Many Requests: retry after 7"},
		// Discord's body says fractional seconds; its header rounds up.
		{"discord 429", notify.ChannelDiscord, notifyfake.RateLimited(1500 * time.Millisecond), 429, false, 1500 * time.Millisecond, "You are being rate limited"},
		// Slack says it only in the Retry-After header.
		{"slack 429", notify.ChannelSlack, notifyfake.RateLimited(3 * time.Second), 429, false, 3 * time.Second, "rate_limited"},
		{"telegram 500", notify.ChannelTelegram, notifyfake.ServerError(), 500, false, 0, "Internal Server Error"},
		{"discord 502", notify.ChannelDiscord, notifyfake.Refused(502, "Bad Gateway"), 502, false, 0, "Bad Gateway"},
		{"slack 500", notify.ChannelSlack, notifyfake.Refused(500, "rollup_error"), 500, false, 0, "rollup_error"},
		{"telegram 408", notify.ChannelTelegram, notifyfake.Refused(408, "Request Timeout"), 408, false, 0, "Request Timeout"},
		{"telegram 400", notify.ChannelTelegram, notifyfake.Refused(400, "Bad Request: chat not found"), 400, true, 0, "Bad Request: chat not found"},
		{"telegram 403", notify.ChannelTelegram, notifyfake.Refused(403, "Forbidden: bot was kicked from the group chat"), 403, true, 0, "bot was kicked"},
		{"discord 404", notify.ChannelDiscord, notifyfake.Refused(404, "Unknown Webhook"), 404, true, 0, "Unknown Webhook"},
		{"slack 410", notify.ChannelSlack, notifyfake.Refused(410, "channel_is_archived"), 410, true, 0, "channel_is_archived"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.fake.Script(tt.channel, tt.reply)

			err := b.client.Send(context.Background(), tt.channel, rejected())

			var nerr *notify.Error
			require.ErrorAs(t, err, &nerr)
			require.Equal(t, tt.channel, nerr.Channel)
			require.Equal(t, tt.wantStatus, nerr.StatusCode)
			require.Equal(t, tt.wantPermanent, nerr.Permanent)
			require.Equal(t, tt.wantRetry, nerr.RetryAfter)
			require.Equal(t, tt.wantStatus == 429, nerr.RateLimited())
			require.ErrorContains(t, err, tt.wantText)
			require.Len(t, b.fake.Requests(tt.channel), 1, "the client itself never retries")

			// Once the script is used up the channel works again.
			require.NoError(t, b.client.Send(context.Background(), tt.channel, rejected()))
		})
	}
}

func TestTelegramGroupMigrated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Telegram's answer when a group became a supergroup.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1001234567890}}`))
	}))
	t.Cleanup(srv.Close)
	cfg := b.fake.Config()
	cfg.TelegramBaseURL = srv.URL
	client, err := notify.New(cfg)
	require.NoError(t, err)

	err = client.Send(context.Background(), notify.ChannelTelegram, rejected())
	var nerr *notify.Error
	require.ErrorAs(t, err, &nerr)
	require.True(t, nerr.Permanent)
	require.ErrorContains(t, err, "set HOOX_TELEGRAM_CHAT_ID to it")
	require.ErrorContains(t, err, "-1001234567890")
}

func TestSendWrongCredentialsArePermanent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.fake.Config()
	cfg.TelegramBotToken = "987654321:wrongwrongwrongwrong"
	cfg.DiscordWebhookURL += "x"
	cfg.SlackWebhookURL += "x"
	client, err := notify.New(cfg)
	require.NoError(t, err)
	for _, ch := range client.Channels() {
		err := client.Send(context.Background(), ch, rejected())
		var nerr *notify.Error
		require.ErrorAs(t, err, &nerr, ch)
		require.True(t, nerr.Permanent, ch)
		require.NotContains(t, err.Error(), "wrongwrong")
	}
}

func TestSendToUnconfiguredChannel(t *testing.T) {
	t.Parallel()
	fake := notifyfake.New(t)
	cfg := fake.Config()
	cfg.SlackWebhookURL = ""
	client, err := notify.New(cfg)
	require.NoError(t, err)

	err = client.Send(context.Background(), notify.ChannelSlack, rejected())
	var nerr *notify.Error
	require.ErrorAs(t, err, &nerr)
	require.True(t, nerr.Permanent)
	require.Empty(t, fake.Requests(""))
}

func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, b.fake.Config().SlackWebhookURL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	client, err := notify.New(notify.Config{SlackWebhookURL: redirector.URL + "/services/T/B/redirectingwebhook"})
	require.NoError(t, err)

	err = client.Send(context.Background(), notify.ChannelSlack, rejected())
	var nerr *notify.Error
	require.ErrorAs(t, err, &nerr)
	require.True(t, nerr.Permanent, "a redirect is a permanent error, got: %v", err)
	require.Equal(t, http.StatusTemporaryRedirect, nerr.StatusCode)
	require.Empty(t, b.fake.Requests(""), "the message went nowhere else")
}

// net/http's errors quote the request's URL, which holds the bot token or
// the webhook's secret: none of it may reach the error.
func TestTransportErrorsNeverHoldSecrets(t *testing.T) {
	t.Parallel()
	fake := notifyfake.New(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	cfg := fake.Config()
	cfg.TelegramBaseURL = deadURL
	cfg.DiscordWebhookURL = strings.Replace(cfg.DiscordWebhookURL, fake.URL(), deadURL, 1)
	cfg.SlackWebhookURL = strings.Replace(cfg.SlackWebhookURL, fake.URL(), deadURL, 1)
	client, err := notify.New(cfg)
	require.NoError(t, err)

	for _, ch := range client.Channels() {
		err := client.Send(context.Background(), ch, rejected())
		var nerr *notify.Error
		require.ErrorAs(t, err, &nerr, ch)
		require.False(t, nerr.Permanent, "no answer is worth retrying")
		require.Zero(t, nerr.StatusCode)
		require.ErrorContains(t, err, "Post "+ch+" endpoint: ")
		require.ErrorContains(t, err, "connection refused")
		for _, secret := range fake.Secrets() {
			require.NotContains(t, err.Error(), secret, ch)
		}
	}

	// A cancelled send says so to errors.Is, still without the URL.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	client, err = notify.New(fake.Config())
	require.NoError(t, err)
	for _, ch := range client.Channels() {
		err := client.Send(ctx, ch, rejected())
		require.ErrorIs(t, err, context.Canceled)
		for _, secret := range fake.Secrets() {
			require.NotContains(t, err.Error(), secret, ch)
		}
	}
	require.Empty(t, fake.Requests(""))
}

// A service that echoes the token in its refusal does not get it into the
// error.
func TestAnswersEchoingSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.fake.Config()
	b.fake.Script(notify.ChannelTelegram, notifyfake.Refused(400, "bad token "+cfg.TelegramBotToken))
	b.fake.Script(notify.ChannelDiscord, notifyfake.Refused(400, "unknown "+cfg.DiscordWebhookURL))
	b.fake.Script(notify.ChannelSlack, notifyfake.Refused(400, "no such hook "+cfg.SlackWebhookURL))
	for _, ch := range b.client.Channels() {
		err := b.client.Send(context.Background(), ch, rejected())
		require.Error(t, err)
		require.ErrorContains(t, err, "[redacted]")
		for _, secret := range b.fake.Secrets() {
			require.NotContains(t, err.Error(), secret, ch)
		}
	}
}

func TestNewRefusesInvalidConfig(t *testing.T) {
	t.Parallel()
	_, err := notify.New(notify.Config{TelegramBotToken: "1:abcdefgh"})
	require.ErrorContains(t, err, "notify.TelegramChatID: is required")
	require.False(t, errors.Is(err, context.Canceled))
}
