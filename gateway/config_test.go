package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/confcheck/confchecktest"
	"github.com/hoox/hoox/internal/timing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*gateway.Config)
		field  string // "" when valid
		says   string
	}{
		{"defaults", func(*gateway.Config) {}, "", ""},
		{"window zero", func(c *gateway.Config) { c.DedupWindow = 0 }, "DedupWindow", "at least 1ms"},
		{"window negative", func(c *gateway.Config) { c.DedupWindow = -time.Second }, "DedupWindow", "at least 1ms"},
		{"window longer than ttl", func(c *gateway.Config) { c.DedupWindow = 2 * time.Hour; c.Timing.TraceTTL = time.Hour }, "DedupWindow", "trace TTL (1h0m0s)"},
		{"window longer than a ttl of its own", func(c *gateway.Config) { c.Timing.TraceTTL = 30 * time.Second }, "DedupWindow", "trace TTL (30s)"},
		{"the shared timings are not the gateway's to refuse", func(c *gateway.Config) { c.Timing.LockWait = 0 }, "", ""},
		{"window equal to ttl", func(c *gateway.Config) { c.DedupWindow = time.Hour; c.Timing.TraceTTL = time.Hour }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := gateway.DefaultConfig()
			tt.mutate(&cfg)
			confchecktest.RequireRefusal(t, cfg.Validate(), "gateway", tt.field, tt.says)
		})
	}
}

func TestConfigWithDefaultsFillsZerosOnly(t *testing.T) {
	t.Parallel()
	require.Equal(t, gateway.DefaultConfig(), gateway.Config{}.WithDefaults())
	got := gateway.Config{Timing: timing.Config{LockWait: 300 * time.Millisecond}}.WithDefaults()
	require.Equal(t, 300*time.Millisecond, got.Timing.LockWait)
	require.Equal(t, gateway.DefaultConfig().Timing.TraceTTL, got.Timing.TraceTTL)
	require.NoError(t, got.Validate())
}
