package app

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/gateway"
	"github.com/hoox/hoox/internal/confcheck"
	"github.com/hoox/hoox/internal/timing"
	"github.com/hoox/hoox/jobs"
	"github.com/hoox/hoox/notify"
)

// Config is every setting a hoox process runs with. The packages own their
// settings, with their defaults and rules (gateway.Config, jobs.Config,
// api.Config); the ones several packages read are declared once in
// timing.Config (Timing); this type holds them side by side with the few
// that only the process uses. cmd/hoox maps each field to its environment
// variable and flag; nothing here reads the environment.
type Config struct {
	DatabaseURL string
	Addr        string
	// DBMaxConns sizes each of the three pools (claims, attempt markers, the
	// paper venue); at least 2. See Budget.
	DBMaxConns int
	// DBMinConns is how many connections each pool keeps open, and
	// prepared, while idle (capped at each pool's size): a burst then never
	// waits for Postgres to start backends.
	DBMinConns int
	// TxPooler says DATABASE_URL is a transaction-pooling PgBouncer; it
	// also makes River poll (jobs.Config.PollOnly).
	TxPooler bool
	// ShutdownWait bounds the HTTP server's drain on shutdown and is the
	// jobs' StopTimeout.
	ShutdownWait time.Duration
	LogFormat    string
	LogLevel     string
	PaperFaults  string
	CrashDrill   bool
	// CrashLegDrill kills the process between the first leg's venue answer
	// and its record (HOOX_DRILL_CRASH_AFTER_LEG), for the multi-order
	// crash tests.
	CrashLegDrill bool
	// ClockSkew offsets the clock the venue adapters, the gateway and the
	// jobs use (HOOX_DRILL_CLOCK_SKEW): a fault drill for the simulator,
	// never set in production.
	ClockSkew time.Duration
	NoMigrate bool
	// AllowAsyncReplication lets hoox start on a primary whose standbys
	// replicate asynchronously (see checkReplication).
	AllowAsyncReplication bool

	// Timing is the one source of the settings the gateway, the jobs and
	// the HTTP layer share (trace TTL, lock wait, venue timeout, signal
	// age). New hands it to each package; their configs' own Timing
	// fields, here, are not read.
	Timing  timing.Config
	Gateway gateway.Config
	Jobs    jobs.Config
	API     api.Config
	// Venues are the real venues' settings, in venues.All()'s order
	// (NewVenueSettings; DefaultConfig allocates them). A copy of a Config
	// shares them: clone the slice to change one copy only.
	Venues []VenueSettings
	// Accounts are the named accounts (HOOX_ACCOUNTS or
	// HOOX_ACCOUNTS_FILE); AccountsFrom is the variable that set them,
	// for the refusals.
	Accounts     []AccountSettings
	AccountsFrom string
	// AccountsPath is HOOX_ACCOUNTS_FILE's path, when the accounts came
	// from a file.
	AccountsPath string
	// Notify configures operators' notifications; NotifyEvents is the raw
	// HOOX_NOTIFY_EVENTS, parsed by Validate.
	Notify       notify.Config
	NotifyEvents string
}

// DefaultConfig is the config hoox starts from before flags and the
// environment apply.
func DefaultConfig() Config {
	return Config{
		Addr:         ":8080",
		DBMaxConns:   16,
		DBMinConns:   4,
		ShutdownWait: 10 * time.Second,
		LogFormat:    "json",
		LogLevel:     "info",
		Timing:       timing.DefaultConfig(),
		Gateway:      gateway.DefaultConfig(),
		Jobs:         jobs.DefaultConfig(),
		API:          api.DefaultConfig(),
		Venues:       NewVenueSettings(),
	}
}

// Derived maps each package setting the process derives from one of its
// own ("jobs.StopTimeout") to that setting ("hoox.ShutdownWait"), so a
// refusal is reported under the setting an operator set.
func Derived() map[string]string {
	return map[string]string{
		"jobs.StopTimeout": "hoox.ShutdownWait",
		"notify.Events":    "hoox.NotifyEvents",
	}
}

// gatewayConfig, jobsConfig and apiConfig are the packages' configs as New
// hands them over: each reads the one Timing, and the jobs the settings
// derived from the process's own (see Derived).
func (c *Config) gatewayConfig() gateway.Config {
	g := c.Gateway
	g.Timing = c.Timing
	return g
}

func (c *Config) jobsConfig() jobs.Config {
	j := c.Jobs
	j.Timing = c.Timing
	j.StopTimeout = c.ShutdownWait
	j.PollOnly = c.TxPooler
	return j
}

func (c *Config) apiConfig() api.Config {
	a := c.API
	a.Timing = c.Timing
	return a
}

// Validate validates the whole config: the shared timings, each package's
// own rules, then the rules that span packages. Every refusal is
// a *confcheck.Error keyed by its field ("hoox.DBMaxConns" for this type's
// own); hoox starts only when Validate passes.
func (c *Config) Validate() error {
	own := confcheck.New("hoox")
	poolOK := true
	if c.DBMaxConns < 2 {
		own.Refuse("DBMaxConns", strconv.Itoa(c.DBMaxConns), "must be at least 2: River and the claims share the pool")
		poolOK = false
	} else if c.TxPooler && c.DBMaxConns < 4 {
		own.Refuse("DBMaxConns", strconv.Itoa(c.DBMaxConns),
			"must be at least 4 with HOOX_TRANSACTION_POOLER: it is split between claims, intents and the paper venue")
		poolOK = false
	}
	if c.DBMinConns < 0 {
		own.Refuse("DBMinConns", strconv.Itoa(c.DBMinConns), "must be 0 or more")
	}
	across := confcheck.New("jobs")
	shared := confcheck.New("timing")
	// The workers are measured against a pool that can exist: against a
	// refused one, every value would be refused too, naming the wrong
	// variable.
	if claims, _, _ := Budget(c.DBMaxConns, c.TxPooler); poolOK && c.Jobs.Workers > int(claims)/2 {
		across.Refuse("Workers", strconv.Itoa(c.Jobs.Workers), fmt.Sprintf(
			"must be at most half of the claim pool (%d of HOOX_DB_MAX_CONNS=%d): each reconcile holds a connection across its venue call, and lost answers must not starve the claims",
			claims, c.DBMaxConns))
	}
	if r, ttl := c.Jobs.AuditRetention, c.Timing.TraceTTL; r > 0 && r < ttl {
		across.Refuse("AuditRetention", r.String(), fmt.Sprintf(
			"must be 0 (keep forever) or at least HOOX_TRACE_TTL (%s): a live trace would lose its audit trail", ttl))
	}
	// A signed request is accepted from MaxSignalAge before to MaxSignalAge
	// after its X-Hoox-Timestamp, so it and a replay of it may arrive twice
	// the age apart; a window signal's replay must still fall inside the
	// window to be a duplicate.
	if age, window := c.Timing.MaxSignalAge, c.Gateway.DedupWindow; window > 0 && 2*age > window {
		shared.Refuse("MaxSignalAge", age.String(), fmt.Sprintf(
			"must be at most half of HOOX_DEDUP_WINDOW (%s): a signed request is accepted from the age before to the age after its timestamp, and one replayed after the window but inside that span would place a second order", window))
	}
	for _, line := range c.checkVenues() {
		own.Refuse("Venues", "", line)
	}
	for _, line := range c.checkAccounts() {
		own.Refuse("Accounts", "", line)
	}
	events, err := notify.ParseEvents(c.NotifyEvents)
	if err != nil {
		own.Refuse("NotifyEvents", "", err.Error())
	}
	c.Notify.Events = events
	return errors.Join(c.Timing.Validate(), c.gatewayConfig().Validate(), c.jobsConfig().Validate(), c.apiConfig().Validate(),
		c.Notify.WithDefaults().Validate(), own.Err(), across.Err(), shared.Err())
}
