package jobs_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/internal/confcheck/confchecktest"
	"github.com/hoox/hoox/jobs"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*jobs.Config)
		field  string // "" when valid
		says   string
	}{
		{"defaults", func(*jobs.Config) {}, "", ""},
		{"purge interval below River's floor", func(c *jobs.Config) { c.PurgeInterval = 500 * time.Millisecond }, "PurgeInterval", "once a second"},
		{"purge interval at River's floor", func(c *jobs.Config) { c.PurgeInterval = time.Second }, "", ""},
		{"purge batch zero", func(c *jobs.Config) { c.PurgeBatch = 0 }, "PurgeBatch", "at least 1"},
		{"audit retention zero keeps forever", func(c *jobs.Config) { c.AuditRetention = 0 }, "", ""},
		{"audit retention negative", func(c *jobs.Config) { c.AuditRetention = -time.Hour }, "AuditRetention", "keep forever"},
		{"lock wait zero", func(c *jobs.Config) { c.LockWait = 0 }, "LockWait", "at least 1ms"},
		{"workers zero", func(c *jobs.Config) { c.Workers = 0 }, "Workers", "at least 1"},
		{"stop timeout zero", func(c *jobs.Config) { c.StopTimeout = 0 }, "StopTimeout", "shutdown"},
		{"sweep interval below River's floor", func(c *jobs.Config) { c.SweepInterval = 999 * time.Millisecond }, "SweepInterval", "once a second"},
		{"sweep interval at River's floor", func(c *jobs.Config) { c.SweepInterval = time.Second }, "", ""},
		{"sweep grace zero", func(c *jobs.Config) { c.SweepGrace = 0 }, "SweepGrace", "live attempt"},
		{"sweep grace negative", func(c *jobs.Config) { c.SweepGrace = -time.Second }, "SweepGrace", "at least 1ms"},
		{"sweep grace a millisecond", func(c *jobs.Config) { c.SweepGrace = time.Millisecond }, "", ""},
		{"sweep give-up zero", func(c *jobs.Config) { c.SweepGiveUp = 0 }, "SweepGiveUp", "first time its venue does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := jobs.DefaultConfig()
			tt.mutate(&cfg)
			confchecktest.RequireRefusal(t, cfg.Validate(), "jobs", tt.field, tt.says)
		})
	}
}

func TestConfigWithDefaultsKeepsAuditForeverAndFillsTheRest(t *testing.T) {
	t.Parallel()
	got := jobs.Config{}.WithDefaults()
	want := jobs.DefaultConfig()
	want.AuditRetention = 0
	require.Equal(t, want, got)
	require.NoError(t, got.Validate())
}

func TestNewClientRefusesAnInvalidConfig(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := jobs.NewClient(b.pool, jobs.Config{PurgeInterval: 10 * time.Millisecond}, jobs.Deps{Venues: b.venues})
	require.Len(t, confcheck.All(err), 1, "%v", err)
	require.ErrorContains(t, err, "PurgeInterval=10ms")
}
