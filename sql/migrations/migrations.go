// Package migrations holds hoox's schema: goose migrations embedded in the binary,
// and River's own schema applied through a goose Go migration so one tool
// owns every table and two replicas starting at once cannot race.
package migrations

import (
	"context"
	stdsql "database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/rivermigrate"

	// pgx's database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

//go:embed *.sql
var embedded embed.FS

// RiverMigrationVersion is the goose version of the Go migration that applies
// River's schema. RiverSchemaVersion is the River migration it targets: pin
// it, and add a new goose migration when River is upgraded.
const (
	RiverMigrationVersion = 2
	RiverSchemaVersion    = 8
)

// LatestVersion is the highest migration version this binary knows: the
// schema is current when the database has applied it.
func LatestVersion() (int64, error) {
	entries, err := fs.ReadDir(embedded, ".")
	if err != nil {
		return 0, fmt.Errorf("read migrations: %w", err)
	}
	latest := int64(RiverMigrationVersion)
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s: version: %w", e.Name(), err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// Open opens a database/sql handle over pgx for goose.
func Open(databaseURL string) (*stdsql.DB, error) {
	db, err := stdsql.Open("pgx", databaseURL)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	return db, nil
}

// NewProvider returns a goose provider over every hoox migration, holding a
// Postgres session lock while it migrates.
func NewProvider(db *stdsql.DB) (*goose.Provider, error) {
	// Poll every second (goose's default is 5 s) for up to 5 minutes, so a
	// replica waiting on another's migration starts soon after it.
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("session locker: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, embedded,
		goose.WithSessionLocker(locker),
		goose.WithGoMigrations(riverMigration()),
	)
	if err != nil {
		return nil, fmt.Errorf("goose provider: %w", err)
	}
	return p, nil
}

// Up applies every pending migration.
func Up(ctx context.Context, db *stdsql.DB) error {
	p, err := NewProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate up: %w", err)
	}
	return nil
}

// Current reports whether every known migration has been applied.
func Current(ctx context.Context, db *stdsql.DB) (bool, error) {
	p, err := NewProvider(db)
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("check pending migrations: %w", err)
	}
	return !pending, nil
}

func riverMigration() *goose.Migration {
	migrate := func(direction rivermigrate.Direction, target int) func(context.Context, *stdsql.DB) error {
		return func(ctx context.Context, db *stdsql.DB) error {
			m, err := rivermigrate.New(riverdatabasesql.New(db), nil)
			if err != nil {
				return fmt.Errorf("river migrator: %w", err)
			}
			if _, err := m.Migrate(ctx, direction, &rivermigrate.MigrateOpts{TargetVersion: target}); err != nil {
				return fmt.Errorf("river migrate %s: %w", direction, err)
			}
			return nil
		}
	}
	return goose.NewGoMigration(RiverMigrationVersion,
		&goose.GoFunc{RunDB: migrate(rivermigrate.DirectionUp, RiverSchemaVersion)},
		// -1 removes every River migration, River's own tables included.
		&goose.GoFunc{RunDB: migrate(rivermigrate.DirectionDown, -1)},
	)
}
