package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hoox/hoox/internal/app"
)

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, _, err := parseConfig("serve", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set: hoox serve needs a Postgres connection string (or run 'hoox dev')")
	}
	if cfg.API.WebhookSecret == "" {
		return errors.New("HOOX_WEBHOOK_SECRET is not set: hoox serve refuses to take signals without a secret")
	}
	logger, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	// HOOX_DRILL_CLOCK_SKEW is the fault simulator's (hoox torture), kept
	// out of --help and the settings table: no operator should set it.
	if v := getenv("HOOX_DRILL_CLOCK_SKEW"); v != "" {
		if cfg.ClockSkew, err = time.ParseDuration(v); err != nil {
			return fmt.Errorf("HOOX_DRILL_CLOCK_SKEW: %w", err)
		}
	}
	return serve(ctx, cfg, logger, nil)
}

// serve runs hoox until ctx ends. ready, when set, is called once it listens.
func serve(ctx context.Context, cfg Config, logger *slog.Logger, ready func(*app.App)) error {
	a, err := app.New(ctx, cfg, logger)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(a)
	}
	<-ctx.Done()
	logger.Info("shutting down")
	a.Close(context.Background())
	return nil
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("HOOX_LOG_LEVEL: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("HOOX_LOG_FORMAT: %q is neither json nor text", format)
}

// shutdownTimeout bounds the whole shutdown of dev's embedded Postgres.
const shutdownTimeout = 30 * time.Second
