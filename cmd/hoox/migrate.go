package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hoox/hoox/sql/migrations"
)

// runMigrate is `hoox migrate up|down|down-to-zero|status`. It holds goose's
// Postgres session lock, so replicas migrating at once take turns.
func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	cfg, rest, err := parseConfig("migrate", args, getenv, stdout, nil)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return errors.New("usage: hoox migrate up|down|down-to-zero|status")
	}
	if cfg.DatabaseURL == "" {
		return errors.New("DATABASE_URL is not set: hoox migrate needs a Postgres connection string")
	}
	sqldb, err := migrations.Open(cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer sqldb.Close()
	p, err := migrations.NewProvider(sqldb)
	if err != nil {
		return err
	}
	switch rest[0] {
	case "up":
		res, err := p.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(stdout, "applied %s (%s)\n", r.Source.Path, r.Duration)
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if len(res) == 0 {
			fmt.Fprintln(stdout, "schema is current")
		}
	case "down":
		r, err := p.Down(ctx)
		if err != nil {
			return fmt.Errorf("migrate down: %w", err)
		}
		fmt.Fprintf(stdout, "rolled back %s\n", r.Source.Path)
	case "down-to-zero":
		res, err := p.DownTo(ctx, 0)
		for _, r := range res {
			fmt.Fprintf(stdout, "rolled back %s\n", r.Source.Path)
		}
		if err != nil {
			return fmt.Errorf("migrate down-to-zero: %w", err)
		}
	case "status":
		st, err := p.Status(ctx)
		if err != nil {
			return fmt.Errorf("migrate status: %w", err)
		}
		for _, s := range st {
			name := s.Source.Path
			if name == "" {
				name = fmt.Sprintf("%05d (go: river schema)", s.Source.Version)
			}
			fmt.Fprintf(stdout, "%-8s %s\n", s.State, name)
		}
	default:
		return fmt.Errorf("unknown migrate command %q: use up, down, down-to-zero or status", rest[0])
	}
	return nil
}
