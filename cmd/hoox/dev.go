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
	"strings"

	"github.com/jackc/pgx/v5"

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
// binaries under ./.hoox, generated secrets, the paper venue.
func runDev(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var dataDir string
	cfg, _, err := parseConfig("dev", args, getenv, stdout, func(fs *flag.FlagSet) {
		fs.StringVar(&dataDir, "data", ".hoox", "where dev keeps its Postgres cluster and secrets")
	})
	if err != nil {
		return err
	}
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
		cluster, err := localpg.Start(ctx, localpg.Config{DataDir: filepath.Join(dataDir, "pg"), Logger: logger})
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
	return serve(ctx, cfg, logger, func(a *app.App) { printDevBanner(stdout, a.Addr(), cfg) })
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
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return fmt.Errorf("connect to embedded postgres: %w", err)
	}
	defer conn.Close(context.Background())
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", dbname).Scan(&exists); err != nil {
		return fmt.Errorf("look up database %s: %w", dbname, err)
	}
	if exists {
		return nil
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{dbname}.Sanitize()); err != nil {
		return fmt.Errorf("create database %s: %w", dbname, err)
	}
	return nil
}

func printDevBanner(w io.Writer, addr string, cfg Config) {
	host := addr
	if strings.HasPrefix(host, "[::]:") || strings.HasPrefix(host, "0.0.0.0:") {
		host = "localhost:" + host[strings.LastIndex(host, ":")+1:]
	}
	fmt.Fprintf(w, `
hoox dev is running on http://%[1]s  (paper exchange, Ctrl-C to stop)

  webhook secret: %[2]s
  admin token:    %[3]s

Send a sample signal:

  curl -sS -X POST http://%[1]s/webhook -H 'Content-Type: application/json' \
    -d '{"secret":"%[2]s","exchange":"paper","symbol":"BTCUSDT","action":"buy","quantity":"0.01","trace_id":"demo-1"}'

Send it again and hoox answers 409 duplicate. Look at it:

  curl -sS http://%[1]s/admin/traces/k:demo-1 -H 'Authorization: Bearer %[3]s'

`, host, cfg.API.WebhookSecret, cfg.API.AdminToken)
}
