package notify_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/notify"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	const token = "123456789:AAsecretsecretsecretsecret"
	const hook = "http://discord.example.com/api/webhooks/1/verysecretwebhooktoken"
	tests := []struct {
		name  string
		cfg   notify.Config
		field string // "" when valid
		says  string
	}{
		{"nothing configured", notify.Config{}, "", ""},
		{"every channel", notify.Config{TelegramBotToken: token, TelegramChatID: "-1001",
			DiscordWebhookURL: "https://discord.com/api/webhooks/1/x", SlackWebhookURL: "https://hooks.slack.com/services/T/B/x",
			Events: []string{"dispatched", "kill_switch"}}, "", ""},
		{"loopback http", notify.Config{SlackWebhookURL: "http://127.0.0.1:9/services/x"}, "", ""},
		{"token without chat", notify.Config{TelegramBotToken: token}, "TelegramChatID", "is required with a Telegram bot token"},
		{"chat without token", notify.Config{TelegramChatID: "42"}, "TelegramBotToken", "is required with a Telegram chat ID"},
		{"token with a slash", notify.Config{TelegramBotToken: "1:abc/../x", TelegramChatID: "1"}, "TelegramBotToken", "is not a bot token"},
		{"plain http webhook", notify.Config{DiscordWebhookURL: hook}, "DiscordWebhookURL", "must be an https URL"},
		{"relative webhook", notify.Config{SlackWebhookURL: "hooks.slack.com/services/secretpart"}, "SlackWebhookURL", "is not an absolute URL"},
		{"plain http base URL", notify.Config{TelegramBaseURL: "http://api.telegram.example"}, "TelegramBaseURL", "must be an https URL"},
		{"unknown event", notify.Config{Events: []string{"rejected", "exploded"}}, "Events", "is not an event; known: rejected, reconciling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.cfg.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			// The shape every package's Validate speaks: the field, which
			// cmd/hoox reports under its variable.
			errs := confcheck.All(err)
			require.Len(t, errs, 1, "%v", err)
			require.Equal(t, "notify", errs[0].Config)
			require.Equal(t, tt.field, errs[0].Field)
			require.Contains(t, errs[0].Rule, tt.says)
			// It never repeats the secret.
			for _, secret := range []string{"AAsecretsecret", "verysecretwebhooktoken", "secretpart"} {
				require.NotContains(t, err.Error(), secret)
			}
		})
	}
}

// Every refusal is reported at once, one error each.
func TestValidateJoinsEveryRefusal(t *testing.T) {
	t.Parallel()
	err := notify.Config{TelegramChatID: "1", SlackWebhookURL: "ftp://x", Events: []string{"nope"}}.Validate()
	var fields []string
	for _, e := range confcheck.All(err) {
		fields = append(fields, e.Field)
	}
	require.Equal(t, []string{"TelegramBotToken", "SlackWebhookURL", "Events"}, fields)
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	cfg := notify.Config{}.WithDefaults()
	require.Equal(t, notify.DefaultEvents(), cfg.Events)
	require.Equal(t, notify.DefaultTelegramBaseURL, cfg.TelegramBaseURL)
	require.NotNil(t, cfg.HTTPClient)
	require.Equal(t, notify.DefaultTimeout, cfg.HTTPClient.Timeout)

	// An explicit empty list means "no event", not "the defaults".
	silent := notify.Config{Events: []string{}}.WithDefaults()
	require.Empty(t, silent.Events)
	require.False(t, silent.Enabled(notify.EventRejected))
}

func TestChannelsAndEnabled(t *testing.T) {
	t.Parallel()
	require.Empty(t, notify.Config{}.Channels())
	require.Empty(t, notify.Config{TelegramBotToken: "1:x"}.Channels(), "a token without a chat is no channel")
	cfg := notify.Config{TelegramBotToken: "1:x", TelegramChatID: "2", SlackWebhookURL: "https://hooks.slack.com/x"}
	require.Equal(t, []string{notify.ChannelTelegram, notify.ChannelSlack}, cfg.Channels())

	require.True(t, cfg.Enabled(notify.EventRejected), "default events")
	require.True(t, cfg.Enabled(notify.EventVenueCredentials))
	require.False(t, cfg.Enabled(notify.EventDispatched), "dispatched is opt-in")
	cfg.Events = []string{notify.EventDispatched}
	require.True(t, cfg.Enabled(notify.EventDispatched))
	require.False(t, cfg.Enabled(notify.EventRejected))
}

func TestParseEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"", notify.DefaultEvents(), ""},
		{"  ", notify.DefaultEvents(), ""},
		{"all", notify.AllEvents(), ""},
		{"none", []string{}, ""},
		{"rejected, Dispatched,kill-switch,,rejected", []string{"rejected", "dispatched", "kill_switch"}, ""},
		{"venue credentials", []string{"venue_credentials"}, ""},
		{"rejected,filled", nil, `HOOX_NOTIFY_EVENTS: unknown event "filled"`},
	}
	for _, tt := range tests {
		got, err := notify.ParseEvents(tt.in)
		if tt.wantErr != "" {
			require.ErrorContains(t, err, tt.wantErr, tt.in)
			require.ErrorContains(t, err, "reconciling", "the error lists the known events")
			continue
		}
		require.NoError(t, err, tt.in)
		require.Equal(t, tt.want, got, tt.in)
		require.NoError(t, notify.Config{Events: got}.Validate())
	}
}
