package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/confcheck"
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
		{"lock wait zero waits forever", func(c *gateway.Config) { c.LockWait = 0 }, "LockWait", "wait forever"},
		{"lock wait below a millisecond is 0ms to Postgres", func(c *gateway.Config) { c.LockWait = 999 * time.Microsecond }, "LockWait", "wait forever"},
		{"lock wait negative", func(c *gateway.Config) { c.LockWait = -time.Second }, "LockWait", "between 1ms and 2.5s"},
		{"lock wait past TradingView's patience", func(c *gateway.Config) { c.LockWait = 3 * time.Second }, "LockWait", "TradingView"},
		{"lock wait at the ceiling", func(c *gateway.Config) { c.LockWait = gateway.MaxLockWait }, "", ""},
		{"lock wait at the floor", func(c *gateway.Config) { c.LockWait = time.Millisecond }, "", ""},
		{"ttl zero", func(c *gateway.Config) { c.TraceTTL = 0 }, "TraceTTL", "every repeat through"},
		{"window zero", func(c *gateway.Config) { c.DedupWindow = 0 }, "DedupWindow", "at least 1ms"},
		{"window negative", func(c *gateway.Config) { c.DedupWindow = -time.Second }, "DedupWindow", "at least 1ms"},
		{"window longer than ttl", func(c *gateway.Config) { c.DedupWindow = 2 * time.Hour; c.TraceTTL = time.Hour }, "DedupWindow", "trace TTL (1h0m0s)"},
		{"window equal to ttl", func(c *gateway.Config) { c.DedupWindow = time.Hour; c.TraceTTL = time.Hour }, "", ""},
		{"venue timeout zero", func(c *gateway.Config) { c.VenueTimeout = 0 }, "VenueTimeout", "every placement as lost"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := gateway.DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.field == "" {
				require.NoError(t, err)
				return
			}
			errs := confcheck.All(err)
			require.Len(t, errs, 1, "%v", err)
			require.Equal(t, "gateway", errs[0].Config)
			require.Equal(t, tt.field, errs[0].Field)
			require.Contains(t, errs[0].Rule, tt.says)
		})
	}
}

func TestConfigWithDefaultsFillsZerosOnly(t *testing.T) {
	t.Parallel()
	require.Equal(t, gateway.DefaultConfig(), gateway.Config{}.WithDefaults())
	got := gateway.Config{LockWait: 300 * time.Millisecond}.WithDefaults()
	require.Equal(t, 300*time.Millisecond, got.LockWait)
	require.Equal(t, gateway.DefaultConfig().TraceTTL, got.TraceTTL)
	require.NoError(t, got.Validate())
}
