package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hoox/hoox/api"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/confcheck"
)

// Config is app.Config: every setting a hoox process runs with. This
// package only maps flags and environment variables onto it (options), and
// reports the packages' refusals under those variables (explain).
type Config = app.Config

// option binds one setting to its flag and environment variable. field is
// the confcheck key ("timing.LockWait") of the setting it sets, so a
// package's refusal is reported under the variable an operator typed.
type option struct {
	flag, env, help string
	value           flag.Value
	field           string
}

// options lists every setting; --help prints them in this order. It is the
// one table from a package's field to its variable.
func options(c *Config) []option {
	return append(append(coreOptions(c), venueOptions(c)...), accountOptions(c)...)
}

func coreOptions(c *Config) []option {
	return []option{
		{"database-url", "DATABASE_URL", "Postgres connection string (dev: the embedded cluster)", stringValue{&c.DatabaseURL}, ""},
		{"addr", "HOOX_ADDR", "listen address", stringValue{&c.Addr}, ""},
		{"webhook-secret", "HOOX_WEBHOOK_SECRET", "webhook secret, also the X-Hoox-Signature HMAC key (required)", secretValue{&c.API.WebhookSecret}, "api.WebhookSecret"},
		{"admin-token", "HOOX_ADMIN_TOKEN", "bearer token for /admin (unset: admin off)", secretValue{&c.API.AdminToken}, "api.AdminToken"},
		{"trace-ttl", "HOOX_TRACE_TTL", "how long a trace ID blocks repeats", durationValue{&c.Timing.TraceTTL}, "timing.TraceTTL"},
		{"dedup-window", "HOOX_DEDUP_WINDOW", "window for signals with neither key nor timestamp (at most the TTL)", durationValue{&c.Gateway.DedupWindow}, "gateway.DedupWindow"},
		{"lock-wait", "HOOX_LOCK_WAIT", "how long a repeat (or a release) waits for the first attempt, and a new signal for a database connection (1ms to 2.5s)", durationValue{&c.Timing.LockWait}, "timing.LockWait"},
		{"venue-timeout", "HOOX_VENUE_TIMEOUT", "longest wait for a venue's answer before reconciling", durationValue{&c.Timing.VenueTimeout}, "timing.VenueTimeout"},
		{"purge-interval", "HOOX_PURGE_INTERVAL", "how often the purge job runs (at least 1s)", durationValue{&c.Jobs.PurgeInterval}, "jobs.PurgeInterval"},
		{"purge-batch", "HOOX_PURGE_BATCH", "rows per purge transaction", intValue{&c.Jobs.PurgeBatch}, "jobs.PurgeBatch"},
		{"audit-retention", "HOOX_AUDIT_RETENTION", "audit rows kept (0 = forever; else at least the TTL)", durationValue{&c.Jobs.AuditRetention}, "jobs.AuditRetention"},
		{"max-signal-age", "HOOX_MAX_SIGNAL_AGE", "oldest signal a reconcile may still place, and the X-Hoox-Timestamp tolerance (1s to half of HOOX_DEDUP_WINDOW)", durationValue{&c.Timing.MaxSignalAge}, "timing.MaxSignalAge"},
		{"require-signed-timestamp", "HOOX_REQUIRE_SIGNED_TIMESTAMP", "refuse an X-Hoox-Signature sent without X-Hoox-Timestamp (a body-only signature never expires; its trace guards it for HOOX_TRACE_TTL)", boolValue{&c.API.RequireSignedTimestamp}, "api.RequireSignedTimestamp"},
		{"reconcile-workers", "HOOX_RECONCILE_WORKERS", "reconciles one replica runs at once (at most half of HOOX_DB_MAX_CONNS)", intValue{&c.Jobs.Workers}, "jobs.Workers"},
		{"reconcile-lock-wait", "HOOX_RECONCILE_LOCK_WAIT", "how long a reconcile waits for a held trace before retrying later", durationValue{&c.Jobs.LockWait}, "jobs.LockWait"},
		{"max-body", "HOOX_MAX_BODY", "largest accepted body (e.g. 64KiB)", byteSizeValue{&c.API.MaxBody}, "api.MaxBody"},
		{"allowed-ips", "HOOX_ALLOWED_IPS", "CIDRs allowed to send signals, or tradingview (empty: any)", ipListValue{&c.API.AllowedIPs}, "api.AllowedIPs"},
		{"trusted-proxies", "HOOX_TRUSTED_PROXIES", "CIDRs whose X-Forwarded-For is believed", ipListValue{&c.API.TrustedProxies}, "api.TrustedProxies"},
		{"rate-limit", "HOOX_RATE_LIMIT", "signals per second accepted (0 = no limit)", floatValue{&c.API.RateLimit}, "api.RateLimit"},
		{"rate-burst", "HOOX_RATE_BURST", "burst allowed above the rate limit", intValue{&c.API.RateBurst}, "api.RateBurst"},
		{"db-max-conns", "HOOX_DB_MAX_CONNS", "gateway connections to Postgres (the paper venue gets as many; at least 2)", intValue{&c.DBMaxConns}, "hoox.DBMaxConns"},
		{"db-min-conns", "HOOX_DB_MIN_CONNS", "connections each pool keeps open and prepared while idle (capped at each pool's size)", intValue{&c.DBMinConns}, "hoox.DBMinConns"},
		{"transaction-pooler", "HOOX_TRANSACTION_POOLER", "DATABASE_URL is a transaction-pooling PgBouncer: no prepared statements, River polls; migrate directly with --no-migrate here", boolValue{&c.TxPooler}, ""},
		{"allow-async-replication", "HOOX_ALLOW_ASYNC_REPLICATION", "start even when the database streams to standbys asynchronously (a failover to one can lose acknowledged signals; docs/FAILOVER.md)", boolValue{&c.AllowAsyncReplication}, ""},
		{"log-format", "HOOX_LOG_FORMAT", "json or text", stringValue{&c.LogFormat}, ""},
		{"log-level", "HOOX_LOG_LEVEL", "debug, info, warn or error", stringValue{&c.LogLevel}, ""},
		{"paper-faults", "HOOX_PAPER_FAULTS", "paper venue fault drill, e.g. unreachable or delay=3s,lose_answer", stringValue{&c.PaperFaults}, ""},
		{"crash-after-venue", "HOOX_DRILL_CRASH_AFTER_VENUE", "fault drill: SIGKILL hoox itself between the venue's answer and the commit", boolValue{&c.CrashDrill}, ""},
		{"crash-after-leg", "HOOX_DRILL_CRASH_AFTER_LEG", "fault drill: SIGKILL hoox itself between a leg's venue answer (the first one) and its record", boolValue{&c.CrashLegDrill}, ""},
		{"shutdown-wait", "HOOX_SHUTDOWN_WAIT", "how long in-flight requests and running jobs may finish on shutdown", durationValue{&c.ShutdownWait}, "hoox.ShutdownWait"},
		{"ui-session-idle", "HOOX_UI_SESSION_IDLE", "how long an unused /ui/ login session lives", durationValue{&c.API.SessionIdle}, "api.SessionIdle"},
		{"admin-statement-timeout", "HOOX_ADMIN_STATEMENT_TIMEOUT", "longest each /admin database statement may run; past it the route answers 503 and changes nothing (at least 1ms)", durationValue{&c.API.AdminStatementTimeout}, "api.AdminStatementTimeout"},
		{"sweep-interval", "HOOX_SWEEP_INTERVAL", "how often the leader sweeps for dead attempts' orders and orphaned reconciles (at least 1s)", durationValue{&c.Jobs.SweepInterval}, "jobs.SweepInterval"},
		{"sweep-grace", "HOOX_SWEEP_GRACE", "how old an unrecorded attempt must be before the sweeper asks its venue", durationValue{&c.Jobs.SweepGrace}, "jobs.SweepGrace"},
		{"telegram-bot-token", "HOOX_TELEGRAM_BOT_TOKEN", "Telegram bot token for notifications (with HOOX_TELEGRAM_CHAT_ID)", secretValue{&c.Notify.TelegramBotToken}, "notify.TelegramBotToken"},
		{"telegram-chat-id", "HOOX_TELEGRAM_CHAT_ID", "Telegram chat to notify", stringValue{&c.Notify.TelegramChatID}, "notify.TelegramChatID"},
		{"discord-webhook-url", "HOOX_DISCORD_WEBHOOK_URL", "Discord channel webhook for notifications", secretValue{&c.Notify.DiscordWebhookURL}, "notify.DiscordWebhookURL"},
		{"slack-webhook-url", "HOOX_SLACK_WEBHOOK_URL", "Slack incoming webhook for notifications", secretValue{&c.Notify.SlackWebhookURL}, "notify.SlackWebhookURL"},
		{"notify-events", "HOOX_NOTIFY_EVENTS", "events to notify (default rejected,reconciling,failed,kill_switch,venue_credentials,order_filled,order_unfollowed; also dispatched, reconciled, order_cancelled, order_expired; all; none)", stringValue{&c.NotifyEvents}, "hoox.NotifyEvents"},
	}
}

// check validates the whole config (app.Config.Validate) and reports every
// refusal under the variable that set it; hoox starts only when check
// passes.
func check(c *Config) error { return explain(c, c.Validate()) }

// explain rewrites the packages' refusals under the variables that set
// them (options' field column, then app.Derived), once each.
func explain(c *Config, err error) error {
	derived := app.Derived()
	env := map[string]string{}
	for _, o := range options(c) {
		if o.field != "" {
			env[o.field] = o.env
		}
	}
	var lines []string
	seen := map[string]bool{}
	for _, e := range confcheck.All(err) {
		key := e.Key()
		if k, ok := derived[key]; ok {
			key = k
		}
		line, once := e.Error(), e.Error()
		if name, ok := env[key]; ok {
			// A variable refused by two rules is reported once.
			once = name
			switch {
			case e.Value != "":
				line = name + "=" + e.Value + ": " + e.Rule
			case strings.Contains(e.Rule, name):
				// A parser's message names its variable already
				// (HOOX_NOTIFY_EVENTS).
				line = e.Rule
			default:
				// Unset, or a secret never repeated: the rule completes
				// the sentence ("HOOX_TELEGRAM_CHAT_ID is required with
				// a Telegram bot token").
				line = name + " " + e.Rule
			}
		} else if strings.Contains(e.Rule, "HOOX_") {
			// A rule that names its variables itself (venues).
			line, once = e.Rule, e.Rule
		}
		if !seen[once] {
			seen[once] = true
			lines = append(lines, line)
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return &settingsError{lines: lines}
}

// settingsError is every refused setting, one per line.
type settingsError struct{ lines []string }

func (e *settingsError) Error() string {
	if len(e.lines) == 1 {
		return e.lines[0]
	}
	return fmt.Sprintf("%d settings refused:\n  %s", len(e.lines), strings.Join(e.lines, "\n  "))
}

// parseConfig applies environment variables, then flags, over the defaults,
// and refuses unsafe settings before the command does anything.
func parseConfig(name string, args []string, getenv func(string) string, stdout io.Writer, extra func(*flag.FlagSet)) (Config, []string, error) {
	cfg := app.DefaultConfig()
	fs := flag.NewFlagSet("hoox "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts := options(&cfg)
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
		return cfg, nil, withoutSecretValue(fs, err)
	}
	if err := check(&cfg); err != nil {
		return cfg, nil, err
	}
	return cfg, fs.Args(), nil
}

func printUsage(w io.Writer, name string, fs *flag.FlagSet, opts []option) {
	fmt.Fprintf(w, "Usage: hoox %s [flags]\n\nSettings (environment variable, flag, default):\n", name)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	defaults := app.DefaultConfig()
	for _, o := range options(&defaults) {
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

// The values below only parse; the rules (ranges, relations) are the
// packages' Validate and Config.check, so each lives in one place.

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
	if err != nil {
		return fmt.Errorf("not a number: %q", s)
	}
	*v.p = f
	return nil
}

// ipListValue parses CIDRs (or "tradingview") into an api.IPList.
type ipListValue struct{ p *api.IPList }

func (v ipListValue) String() string {
	if v.p == nil {
		return ""
	}
	parts := make([]string, len(*v.p))
	for i, p := range *v.p {
		parts[i] = p.String()
	}
	return strings.Join(parts, ",")
}
func (v ipListValue) Set(s string) error {
	l, err := api.ParseIPList(s)
	if err != nil {
		return err
	}
	*v.p = l
	return nil
}

// byteSizeValue is a size like 64KiB, 1MiB or 65536.
type byteSizeValue struct{ p *int64 }

func (v byteSizeValue) String() string {
	if v.p == nil {
		return ""
	}
	b := *v.p
	switch {
	case b > 0 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b > 0 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return strconv.FormatInt(b, 10)
}

func (v byteSizeValue) Set(s string) error {
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
	*v.p = n * mult
	return nil
}

// withoutSecretValue is err, a flag parse error, without the value it
// quotes when the flag holds secrets (--accounts' API keys and secrets,
// a secret setting): the flag package writes `invalid value "<value>" for
// flag -name: <why>`, and main prints the error to the log.
func withoutSecretValue(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	const prefix = `invalid value "`
	if !strings.HasPrefix(msg, prefix) {
		return err
	}
	var name string
	fs.VisitAll(func(f *flag.Flag) {
		if name == "" && strings.Contains(msg, `" for flag -`+f.Name+`: `) && holdsSecret(f.Value) {
			name = f.Name
		}
	})
	if name == "" {
		return err
	}
	why := msg[strings.Index(msg, `" for flag -`+name+`: `)+len(`" for flag -`+name+`: `):]
	return fmt.Errorf("--%s: %s", name, why)
}

// holdsSecret reports whether a flag's value may hold a secret.
func holdsSecret(v flag.Value) bool {
	switch v.(type) {
	case secretValue, *secretValue, accountsValue, *accountsValue:
		return true
	}
	return false
}
