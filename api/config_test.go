package api_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/db"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/confcheck/confchecktest"
	"github.com/hoox/hoox/internal/timing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*api.Config)
		field  string // "" when valid
		says   string
	}{
		{"defaults", func(*api.Config) {}, "", ""},
		{"no rate limit", func(c *api.Config) { c.RateLimit = 0; c.RateBurst = 0 }, "", ""},
		{"a slow rate", func(c *api.Config) { c.RateLimit = 0.001; c.RateBurst = 1 }, "", ""},
		{"max body zero", func(c *api.Config) { c.MaxBody = 0 }, "MaxBody", "at least 1 byte"},
		{"negative rate", func(c *api.Config) { c.RateLimit = -1 }, "RateLimit", "finite"},
		{"rate not a number", func(c *api.Config) { c.RateLimit = math.NaN() }, "RateLimit", "finite"},
		{"infinite rate", func(c *api.Config) { c.RateLimit = math.Inf(1) }, "RateLimit", "finite"},
		{"rate with a zero burst refuses everything", func(c *api.Config) { c.RateLimit = 5; c.RateBurst = 0 }, "RateBurst", "every signal is refused"},
		{"session idle zero", func(c *api.Config) { c.SessionIdle = 0 }, "SessionIdle", "at least 1m0s"},
		{"session idle below a minute", func(c *api.Config) { c.SessionIdle = 59 * time.Second }, "SessionIdle", "outlive a page's polling"},
		{"session idle a minute", func(c *api.Config) { c.SessionIdle = time.Minute }, "", ""},
		{"admin statement timeout zero", func(c *api.Config) { c.AdminStatementTimeout = 0 }, "AdminStatementTimeout", "at least 1ms"},
		{"admin statement timeout negative", func(c *api.Config) { c.AdminStatementTimeout = -time.Second }, "AdminStatementTimeout", "unbounded"},
		{"admin statement timeout below a millisecond", func(c *api.Config) { c.AdminStatementTimeout = time.Microsecond }, "AdminStatementTimeout", "at least 1ms"},
		{"admin statement timeout a millisecond", func(c *api.Config) { c.AdminStatementTimeout = time.Millisecond }, "", ""},
		{"a short webhook secret", func(c *api.Config) { c.WebhookSecret = "x" }, "WebhookSecret", "at least 16 characters"},
		{"a 15-character webhook secret", func(c *api.Config) { c.WebhookSecret = "123456789012345" }, "WebhookSecret", "at least 16 characters"},
		{"a 16-character webhook secret", func(c *api.Config) { c.WebhookSecret = "1234567890123456" }, "", ""},
		{"a short admin token", func(c *api.Config) { c.AdminToken = "changeme" }, "AdminToken", "at least 16 characters"},
		{"a 16-character admin token", func(c *api.Config) { c.AdminToken = "1234567890123456" }, "", ""},
		{"an admin token with spaces around it", func(c *api.Config) { c.AdminToken = "1234567890123456 " }, "AdminToken", "spaces"},
		{"16 bytes but fewer characters", func(c *api.Config) { c.AdminToken = "ééééééééé" }, "AdminToken", "at least 16 characters"},
		{"an admin token equal to the webhook secret", func(c *api.Config) {
			c.WebhookSecret, c.AdminToken = "1234567890123456", "1234567890123456"
		}, "AdminToken", "must differ from HOOX_WEBHOOK_SECRET"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := api.DefaultConfig()
			tt.mutate(&cfg)
			confchecktest.RequireRefusal(t, cfg.Validate(), "api", tt.field, tt.says)
		})
	}
}

// The secrets these tests run with are ones hoox would start with.
func TestTestSecretsAreLongEnough(t *testing.T) {
	t.Parallel()
	cfg := api.DefaultConfig()
	cfg.WebhookSecret, cfg.AdminToken = webhookSecret, adminToken
	require.NoError(t, cfg.Validate())
}

func TestConfigValidateNeverRepeatsTheSecret(t *testing.T) {
	t.Parallel()
	cfg := api.DefaultConfig()
	cfg.WebhookSecret, cfg.AdminToken = "hunter2-secret", "hunter2-token"
	cfg.MaxBody, cfg.RateLimit = -1, -1
	err := cfg.Validate()
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

// The defaults live in DefaultConfig alone: WithDefaults fills a zero
// Config with exactly them, the shared lock wait and the login throttle
// included.
func TestConfigWithDefaults(t *testing.T) {
	t.Parallel()
	got := api.Config{}.WithDefaults()
	want := api.DefaultConfig()
	require.Equal(t, want, got)
	require.Equal(t, gateway.DefaultConfig().Timing.LockWait, got.Timing.LockWait, "a release waits as long as a repeat")
	require.Equal(t, db.DefaultLoginThrottle(), got.LoginThrottle)

	kept := api.Config{Timing: timing.Config{LockWait: 300 * time.Millisecond}, LoginThrottle: db.LoginThrottle{FreeTries: 7}}.WithDefaults()
	require.Equal(t, 300*time.Millisecond, kept.Timing.LockWait)
	require.Equal(t, 7, kept.LoginThrottle.FreeTries)
	require.Equal(t, db.DefaultLoginThrottle().Delay, kept.LoginThrottle.Delay)
}
