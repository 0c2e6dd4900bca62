package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hoox/hoox/exchange"
	"github.com/hoox/hoox/exchange/venues"
	"github.com/hoox/hoox/internal/app"
	"github.com/hoox/hoox/internal/localpg"
)

// devSecrets are generated on the first `hoox dev` and kept for the next, so
// alerts pasted into TradingView keep working across restarts.
type devSecrets struct {
	WebhookSecret string `json:"webhook_secret"`
	AdminToken    string `json:"admin_token"`
}

// runDev is the embedded default: a local Postgres from the installed server
// binaries under ./.hoox, generated secrets, the paper venue, and with
// --fake-venue in-process fakes of real venues to try the real adapters on.
func runDev(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dataDir, fakeVenues string
	cfg, _, err := parseConfig("dev", args, getenv, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&dataDir, "data", ".hoox", "where dev keeps its Postgres cluster and secrets")
		fs.StringVar(&fakeVenues, "fake-venue", "", "start in-process fakes of these venues on loopback and trade on them with the real adapters: "+
			"comma-separated "+strings.Join(venues.Names(), ", ")+", or all")
	})
	if err != nil {
		return err
	}
	fakes, err := startFakeVenues(fakeVenues, &cfg)
	if err != nil {
		return err
	}
	defer fakes.close()
	if getenv("HOOX_LOG_FORMAT") == "" && !flagGiven(args, "log-format") {
		cfg.LogFormat = "text" // a person reads dev's log
	}
	logger, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dataDir, err)
	}
	secrets, err := loadOrCreateSecrets(filepath.Join(dataDir, "secrets.json"))
	if err != nil {
		return err
	}
	if cfg.API.WebhookSecret == "" {
		cfg.API.WebhookSecret = secrets.WebhookSecret
	}
	if cfg.API.AdminToken == "" {
		cfg.API.AdminToken = secrets.AdminToken
	}

	if cfg.DatabaseURL == "" {
		cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dataDir, "pg"), Logger: logger,
			Settings: localpg.ProductionSettings()})
		if errors.Is(err, localpg.ErrAlreadyRunning) {
			return fmt.Errorf("another 'hoox dev' is already running on %s; stop it first or pass --data: %w", dataDir, err)
		}
		if err != nil {
			return fmt.Errorf("start embedded postgres: %w", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			if err := cluster.Stop(sctx); err != nil {
				logger.Error("stop embedded postgres", "error", err)
			}
		}()
		if err := ensureDatabase(ctx, cluster.URL("postgres"), "hoox"); err != nil {
			return err
		}
		cfg.DatabaseURL = cluster.URL("hoox")
		fmt.Fprintf(stdout, "embedded postgres: psql %q\n", cfg.DatabaseURL)
	}
	return serve(ctx, cfg, logger, func(a *app.App) {
		printDevBanner(stdout, a.Addr(), cfg)
		fakes.printBanner(stdout, a.Addr(), cfg)
	})
}

// devFakes are the venue fakes `hoox dev --fake-venue` runs in-process:
// one server per venues.Fake.Server (one Binance fake serves spot and
// futures, one Bybit fake linear and spot), as the real venues do behind
// one host.
type devFakes struct {
	servers map[string]venues.FakeServer
	// names are the exchange names configured at a fake, in venues.All()'s
	// order.
	names []string
}

// startFakeVenues starts the fakes list names and points cfg's venues at
// them with the fakes' own keys. A venue that already has credentials is
// refused: a dev session must not mix a real account with a fake one
// under one exchange name.
func startFakeVenues(list string, cfg *Config) (_ *devFakes, err error) {
	f := &devFakes{servers: map[string]venues.FakeServer{}}
	if strings.TrimSpace(list) == "" {
		return f, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.ToLower(strings.TrimSpace(n))
		switch {
		case n == "all":
			for _, k := range venues.All() {
				want[k.Name] = true
			}
		case slices.Contains(venues.Names(), n):
			want[n] = true
		case n != "":
			return nil, fmt.Errorf("--fake-venue %q: want a comma-separated list of %s, or all", n, strings.Join(venues.Names(), ", "))
		}
	}
	defer func() {
		if err != nil {
			f.close()
		}
	}()
	for _, k := range venues.All() {
		if !want[k.Name] {
			continue
		}
		v := cfg.Venue(k.Name)
		if *v != (app.VenueSettings{}) {
			return nil, fmt.Errorf("--fake-venue %s: HOOX_%s_* is set too; unset it to trade on the fake, or drop %s from --fake-venue", k.Name, k.Env, k.Name)
		}
		srv, ok := f.servers[k.Fake.Server]
		if !ok {
			if srv, err = k.Fake.Start("127.0.0.1:0"); err != nil {
				return nil, fmt.Errorf("start the %s fake: %w", k.Fake.Server, err)
			}
			f.servers[k.Fake.Server] = srv
		}
		fake := srv.Venue(k.Fake.Market)
		*v = app.VenueSettings{APIKey: fake.APIKey(), APISecret: fake.APISecret(), APIPassphrase: fake.Passphrase(), BaseURL: fake.URL()}
		f.names = append(f.names, k.Name)
	}
	return f, nil
}

func (f *devFakes) close() {
	if f == nil {
		return
	}
	for _, s := range f.servers {
		s.Close()
	}
}

// printBanner names the fakes and gives a curl for the first one.
func (f *devFakes) printBanner(w io.Writer, addr string, cfg Config) {
	if len(f.names) == 0 {
		return
	}
	host := bannerHost(addr)
	fmt.Fprintf(w, "Fake venues on loopback, traded through the real adapters (signing, filters, lookups):\n\n")
	for _, k := range venues.All() {
		if slices.Contains(f.names, k.Name) {
			fmt.Fprintf(w, "  %-16s %s\n", k.Name, exchange.RedactURL(cfg.Venue(k.Name).BaseURL))
		}
	}
	fmt.Fprintf(w, `
Send a signal to %[3]s (BTCUSDT fills at the fake's ticker price):

  curl -sS -X POST http://%[1]s/webhook -H 'Content-Type: application/json' \
    -d '{"secret":"%[2]s","exchange":"%[3]s","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"fake-demo-1"}'

`, host, cfg.API.WebhookSecret, f.names[0])
}

// bannerHost is addr as a person pastes it into curl.
func bannerHost(addr string) string {
	if strings.HasPrefix(addr, "[::]:") || strings.HasPrefix(addr, "0.0.0.0:") {
		return "localhost:" + addr[strings.LastIndex(addr, ":")+1:]
	}
	return addr
}

func flagGiven(args []string, name string) bool {
	for _, a := range args {
		if a == "-"+name || a == "--"+name || strings.HasPrefix(a, "-"+name+"=") || strings.HasPrefix(a, "--"+name+"=") {
			return true
		}
	}
	return false
}

func loadOrCreateSecrets(path string) (devSecrets, error) {
	var s devSecrets
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &s); err != nil {
			return s, fmt.Errorf("read %s: %w", path, err)
		}
		if s.WebhookSecret != "" && s.AdminToken != "" {
			return s, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return s, fmt.Errorf("read %s: %w", path, err)
	}
	s = devSecrets{WebhookSecret: randomToken(), AdminToken: randomToken()}
	b, _ = json.MarshalIndent(s, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return s, fmt.Errorf("write %s: %w", path, err)
	}
	return s, nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ensureDatabase creates dbname on first start.
func ensureDatabase(ctx context.Context, adminURL, dbname string) error {
	return localpg.EnsureDatabase(ctx, adminURL, dbname)
}

func printDevBanner(w io.Writer, addr string, cfg Config) {
	host := bannerHost(addr)
	fmt.Fprintf(w, `
hoox dev is running on http://%[1]s  (paper exchange%[4]s, Ctrl-C to stop)

  webhook secret: %[2]s
  admin token:    %[3]s

Send a sample signal:

  curl -sS -X POST http://%[1]s/webhook -H 'Content-Type: application/json' \
    -d '{"secret":"%[2]s","exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"demo-1"}'

Send it again and hoox answers 409 duplicate. Look at it:

  curl -sS http://%[1]s/admin/traces/k:demo-1 -H 'Authorization: Bearer %[3]s'

Or open http://%[1]s/ and log in with the admin token.

`, host, cfg.API.WebhookSecret, cfg.API.AdminToken, configuredVenues(cfg))
}

// configuredVenues names the real venues (or their fakes) hoox dev trades
// on besides paper, for the banner.
func configuredVenues(cfg Config) string {
	var names []string
	for _, k := range venues.All() {
		if v := cfg.Venue(k.Name); v != nil && v.APIKey != "" {
			names = append(names, k.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " and " + strings.Join(names, ", ")
}
