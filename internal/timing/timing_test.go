package timing_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/confcheck/confchecktest"
	"github.com/hoox/hoox/internal/timing"
)

// The shared timings' rules, once. These cases were the gateway's, the
// jobs' and the HTTP layer's while each declared its copy; where two copies
// worded a refusal differently, the one an operator saw (the first
// cmd/hoox reported) is the one kept.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*timing.Config)
		field  string // "" when valid
		says   string
	}{
		{"defaults", func(*timing.Config) {}, "", ""},
		{"lock wait zero waits forever", func(c *timing.Config) { c.LockWait = 0 }, "LockWait", "wait forever"},
		{"lock wait below a millisecond is 0ms to Postgres", func(c *timing.Config) { c.LockWait = 999 * time.Microsecond }, "LockWait", "wait forever"},
		{"lock wait half a millisecond", func(c *timing.Config) { c.LockWait = 500 * time.Microsecond }, "LockWait", "between 1ms and 2.5s"},
		{"lock wait negative", func(c *timing.Config) { c.LockWait = -time.Second }, "LockWait", "between 1ms and 2.5s"},
		{"lock wait past TradingView's patience", func(c *timing.Config) { c.LockWait = 3 * time.Second }, "LockWait", "TradingView"},
		{"lock wait at the ceiling", func(c *timing.Config) { c.LockWait = timing.MaxLockWait }, "", ""},
		{"lock wait at the floor", func(c *timing.Config) { c.LockWait = timing.MinLockWait }, "", ""},
		{"ttl zero", func(c *timing.Config) { c.TraceTTL = 0 }, "TraceTTL", "every repeat through"},
		{"ttl negative", func(c *timing.Config) { c.TraceTTL = -time.Hour }, "TraceTTL", "at least 1ms"},
		{"venue timeout zero", func(c *timing.Config) { c.VenueTimeout = 0 }, "VenueTimeout", "every placement as lost"},
		{"max signal age zero", func(c *timing.Config) { c.MaxSignalAge = 0 }, "MaxSignalAge", "at least 1ms"},
		{"max signal age negative", func(c *timing.Config) { c.MaxSignalAge = -time.Second }, "MaxSignalAge", "every reconcile"},
		{"max signal age below a second", func(c *timing.Config) { c.MaxSignalAge = 999 * time.Millisecond }, "MaxSignalAge", "whole seconds"},
		{"max signal age a second", func(c *timing.Config) { c.MaxSignalAge = time.Second }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := timing.DefaultConfig()
			tt.mutate(&cfg)
			confchecktest.RequireRefusal(t, cfg.Validate(), "timing", tt.field, tt.says)
		})
	}
}

func TestConfigWithDefaultsFillsZerosOnly(t *testing.T) {
	t.Parallel()
	require.Equal(t, timing.DefaultConfig(), timing.Config{}.WithDefaults())
	got := timing.Config{LockWait: 300 * time.Millisecond}.WithDefaults()
	require.Equal(t, 300*time.Millisecond, got.LockWait)
	require.Equal(t, timing.DefaultConfig().TraceTTL, got.TraceTTL)
	require.NoError(t, got.Validate())
}
