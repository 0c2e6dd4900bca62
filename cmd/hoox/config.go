package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Config is every setting hoox reads, with its defaults visible in one place
// (defaultConfig). Each comes from an environment variable and can be
// overridden by the flag of the same name.
type Config struct {
	DatabaseURL    string
	Addr           string
	WebhookSecret  string
	AdminToken     string
	TraceTTL       time.Duration
	DedupWindow    time.Duration
	LockWait       time.Duration
	VenueTimeout   time.Duration
	PurgeInterval  time.Duration
	PurgeBatch     int
	AuditRetention time.Duration
	MaxSignalAge   time.Duration
	MaxBody        byteSize
	AllowedIPs     string
	TrustedProxies string
	RateLimit      float64
	RateBurst      int
	DBMaxConns     int
	LogFormat      string
	LogLevel       string
	PaperFaults    string
	CrashDrill     bool
	TxPooler       bool
	ShutdownWait   time.Duration
	NoMigrate      bool
}

func defaultConfig() Config {
	return Config{
		Addr:           ":8080",
		TraceTTL:       24 * time.Hour,
		DedupWindow:    60 * time.Second,
		LockWait:       2 * time.Second,
		VenueTimeout:   10 * time.Second,
		PurgeInterval:  time.Minute,
		PurgeBatch:     5000,
		AuditRetention: 90 * 24 * time.Hour,
		MaxSignalAge:   30 * time.Second,
		MaxBody:        64 << 10,
		RateBurst:      20,
		DBMaxConns:     16,
		LogFormat:      "json",
		LogLevel:       "info",
		ShutdownWait:   10 * time.Second,
	}
}

// option binds one setting to its flag and environment variable.
type option struct {
	flag, env, help string
	value           flag.Value
}

// options lists every setting; --help prints them in this order.
func (c *Config) options() []option {
	return []option{
		{"database-url", "DATABASE_URL", "Postgres connection string (dev: the embedded cluster)", stringValue{&c.DatabaseURL}},
		{"addr", "HOOX_ADDR", "listen address", stringValue{&c.Addr}},
		{"webhook-secret", "HOOX_WEBHOOK_SECRET", "webhook secret, also the X-Hoox-Signature HMAC key (required)", secretValue{&c.WebhookSecret}},
		{"admin-token", "HOOX_ADMIN_TOKEN", "bearer token for /admin (unset: admin off)", secretValue{&c.AdminToken}},
		{"trace-ttl", "HOOX_TRACE_TTL", "how long a trace ID blocks repeats", durationValue{&c.TraceTTL}},
		{"dedup-window", "HOOX_DEDUP_WINDOW", "window for signals with neither key nor timestamp", durationValue{&c.DedupWindow}},
		{"lock-wait", "HOOX_LOCK_WAIT", "how long a repeat waits for the first attempt", durationValue{&c.LockWait}},
		{"venue-timeout", "HOOX_VENUE_TIMEOUT", "longest wait for a venue's answer before reconciling", durationValue{&c.VenueTimeout}},
		{"purge-interval", "HOOX_PURGE_INTERVAL", "how often the purge job runs", durationValue{&c.PurgeInterval}},
		{"purge-batch", "HOOX_PURGE_BATCH", "rows per purge transaction", intValue{&c.PurgeBatch}},
		{"audit-retention", "HOOX_AUDIT_RETENTION", "audit rows kept (0 = forever)", durationValue{&c.AuditRetention}},
		{"max-signal-age", "HOOX_MAX_SIGNAL_AGE", "oldest signal a reconcile may still place", durationValue{&c.MaxSignalAge}},
		{"max-body", "HOOX_MAX_BODY", "largest accepted body (e.g. 64KiB)", &c.MaxBody},
		{"allowed-ips", "HOOX_ALLOWED_IPS", "CIDRs allowed to send signals, or tradingview (empty: any)", stringValue{&c.AllowedIPs}},
		{"trusted-proxies", "HOOX_TRUSTED_PROXIES", "CIDRs whose X-Forwarded-For is believed", stringValue{&c.TrustedProxies}},
		{"rate-limit", "HOOX_RATE_LIMIT", "signals per second accepted (0 = no limit)", floatValue{&c.RateLimit}},
		{"rate-burst", "HOOX_RATE_BURST", "burst allowed above the rate limit", intValue{&c.RateBurst}},
		{"db-max-conns", "HOOX_DB_MAX_CONNS", "gateway connections to Postgres (the paper venue gets as many)", intValue{&c.DBMaxConns}},
		{"transaction-pooler", "HOOX_TRANSACTION_POOLER", "DATABASE_URL is a transaction-pooling PgBouncer: no prepared statements, River polls; migrate directly with --no-migrate here", boolValue{&c.TxPooler}},
		{"log-format", "HOOX_LOG_FORMAT", "json or text", stringValue{&c.LogFormat}},
		{"log-level", "HOOX_LOG_LEVEL", "debug, info, warn or error", stringValue{&c.LogLevel}},
		{"paper-faults", "HOOX_PAPER_FAULTS", "paper venue fault drill, e.g. unreachable or delay=3s,lose_answer", stringValue{&c.PaperFaults}},
		{"crash-after-venue", "HOOX_DRILL_CRASH_AFTER_VENUE", "fault drill: SIGKILL hoox itself between the venue's answer and the commit", boolValue{&c.CrashDrill}},
		{"shutdown-wait", "HOOX_SHUTDOWN_WAIT", "how long in-flight requests may finish on shutdown", durationValue{&c.ShutdownWait}},
	}
}

// parseConfig applies environment variables, then flags, over the defaults.
func parseConfig(name string, args []string, getenv func(string) string, stdout io.Writer, extra func(*flag.FlagSet)) (Config, []string, error) {
	cfg := defaultConfig()
	fs := flag.NewFlagSet("hoox "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := cfg.options()
	for _, o := range opts {
		if v := getenv(o.env); v != "" {
			if err := o.value.Set(v); err != nil {
				return cfg, nil, fmt.Errorf("%s: %w", o.env, err)
			}
		}
		fs.Var(o.value, o.flag, o.help)
	}
	fs.BoolVar(&cfg.NoMigrate, "no-migrate", false, "do not apply migrations at start")
	if extra != nil {
		extra(fs)
	}
	fs.Usage = func() { printUsage(stdout, name, fs, opts) }
	// On -h the flag package prints fs.Usage itself and returns ErrHelp.
	if err := fs.Parse(args); err != nil {
		return cfg, nil, err
	}
	return cfg, fs.Args(), nil
}

func printUsage(w io.Writer, name string, fs *flag.FlagSet, opts []option) {
	fmt.Fprintf(w, "Usage: hoox %s [flags]\n\nSettings (environment variable, flag, default):\n", name)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defaults := defaultConfig()
	for _, o := range defaults.options() {
		def := o.value.String()
		if def == "" {
			def = "-"
		}
		fmt.Fprintf(tw, "  %s\t--%s\t%s\t%s\n", o.env, o.flag, def, o.help)
	}
	_ = tw.Flush()
	known := map[string]bool{}
	for _, o := range opts {
		known[o.flag] = true
	}
	var rest []string
	fs.VisitAll(func(f *flag.Flag) {
		if !known[f.Name] {
			rest = append(rest, fmt.Sprintf("  --%s\t%s (default %q)", f.Name, f.Usage, f.DefValue))
		}
	})
	if len(rest) > 0 {
		fmt.Fprintf(w, "\nFlags:\n%s\n", strings.Join(rest, "\n"))
	}
}

type stringValue struct{ p *string }

func (v stringValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}
func (v stringValue) Set(s string) error { *v.p = s; return nil }

// secretValue never prints its value, so --help and error messages cannot
// leak a secret taken from the environment.
type secretValue struct{ p *string }

func (v secretValue) String() string     { return "" }
func (v secretValue) Set(s string) error { *v.p = s; return nil }

type durationValue struct{ p *time.Duration }

func (v durationValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}
func (v durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if d < 0 {
		return fmt.Errorf("must not be negative")
	}
	*v.p = d
	return nil
}

type intValue struct{ p *int }

func (v intValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.Itoa(*v.p)
}
func (v intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("not an integer: %q", s)
	}
	if n < 0 {
		return fmt.Errorf("must not be negative")
	}
	*v.p = n
	return nil
}

type boolValue struct{ p *bool }

func (v boolValue) String() string {
	if v.p == nil {
		return "false"
	}
	return strconv.FormatBool(*v.p)
}
func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("not a boolean: %q", s)
	}
	*v.p = b
	return nil
}

// IsBoolFlag lets the flag be given without a value.
func (v boolValue) IsBoolFlag() bool { return true }

type floatValue struct{ p *float64 }

func (v floatValue) String() string {
	if v.p == nil {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'f', -1, 64)
}
func (v floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return fmt.Errorf("not a non-negative number: %q", s)
	}
	*v.p = f
	return nil
}

// byteSize is a size like 64KiB, 1MiB or 65536.
type byteSize int64

func (b *byteSize) String() string {
	switch {
	case *b > 0 && *b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", *b>>20)
	case *b > 0 && *b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", *b>>10)
	}
	return strconv.FormatInt(int64(*b), 10)
}

func (b *byteSize) Set(s string) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1000}, {"MB", 1000_000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 {
		return fmt.Errorf("not a positive size: %q", s)
	}
	*b = byteSize(n * mult)
	return nil
}
