package bunstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/migrate"

	"github.com/profilesvc/profilesvc/migrations"
)

// migrationLockWait bounds how long Migrate waits for another instance's
// migration lock. A lock left behind by a crashed instance is never released
// by itself; the error then tells the operator where it is.
const migrationLockWait = 2 * time.Minute

// Migrate applies the embedded migrations of the store's dialect that are not
// applied yet and returns their names.
func (s *Store) Migrate(ctx context.Context) ([]string, error) {
	fsys := migrations.SQLite
	if s.dialect == DialectPostgres {
		fsys = migrations.Postgres
	}
	return MigrateFS(withoutDeadline(ctx), s.db, fsys)
}

// MigrateFS applies the bun SQL migrations found at the root of fsys that are
// not applied yet, in order, and returns the names of those it applied. A
// migration is recorded as applied only after it succeeded, and instances
// that start together take turns through bun's migration lock.
func MigrateFS(ctx context.Context, db *bun.DB, fsys fs.FS) ([]string, error) {
	ms := migrate.NewMigrations()
	if err := ms.Discover(fsys); err != nil {
		return nil, fmt.Errorf("migrate: read migrations: %w", err)
	}
	// Without WithMarkAppliedOnSuccess bun records a migration before running
	// it, so a migration that fails would count as applied.
	m := migrate.NewMigrator(db, ms, migrate.WithMarkAppliedOnSuccess(true))

	if err := initMigrator(ctx, m); err != nil {
		return nil, fmt.Errorf("migrate: create migration tables: %w", err)
	}
	if err := lockMigrator(ctx, m); err != nil {
		return nil, err
	}
	defer func() {
		// Unlock even when ctx is cancelled, or the lock would outlive us.
		_ = m.Unlock(context.WithoutCancel(ctx))
	}()

	group, err := m.Migrate(ctx)
	var applied []string
	for _, mig := range group.Migrations {
		applied = append(applied, mig.String())
	}
	if err != nil {
		// The last migration of the group is the one that failed.
		if len(applied) > 0 {
			applied = applied[:len(applied)-1]
		}
		return applied, fmt.Errorf("migrate: %w", err)
	}
	return applied, nil
}

// initMigrator creates bun's tables. On PostgreSQL two concurrent
// "CREATE TABLE IF NOT EXISTS" of the same table can still clash in the
// catalog; the loser finds the table on its next try. bun creates two
// tables, so at most two tries can lose.
func initMigrator(ctx context.Context, m *migrate.Migrator) error {
	var err error
	for range 3 {
		if err = m.Init(ctx); err == nil || !isCatalogRace(err) {
			return err
		}
	}
	return err
}

func isCatalogRace(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "23505", // unique_violation, in pg_type
		"42P07", // duplicate_table
		"42710": // duplicate_object, the table's row type
		return true
	}
	return false
}

// lockMigrator takes bun's migration lock, waiting while another instance
// holds it: bun's Lock fails at once instead of waiting.
func lockMigrator(ctx context.Context, m *migrate.Migrator) error {
	deadline := time.Now().Add(migrationLockWait)
	wait := 50 * time.Millisecond
	for {
		err := m.Lock(ctx)
		if err == nil {
			return nil
		}
		if !isUniqueViolation(err) {
			return fmt.Errorf("migrate: take migration lock: %w", err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("migrate: another instance has held the migration lock for over %s; "+
				"if none is migrating, delete its row from bun_migration_locks: %w", migrationLockWait, err)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("migrate: wait for migration lock: %w", ctx.Err())
		case <-timer.C:
		}
		wait = min(2*wait, time.Second)
	}
}
