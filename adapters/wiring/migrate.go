package wiring

import (
	"context"

	"github.com/profilesvc/profilesvc/config"
)

// Migrate applies the pending migrations of cfg's database and returns their
// names. The memory store has nothing to migrate.
func Migrate(ctx context.Context, cfg config.Config) ([]string, error) {
	if cfg.Database.Kind == config.DatabaseMemory {
		return nil, nil
	}
	s, err := openSQLStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// Not under a running service: it would go on serving the profiles it
	// cached before the migration.
	lock, err := lockSQLite(cfg.Database)
	if err != nil {
		return nil, err
	}
	if lock != nil {
		defer lock.Release()
	}
	return s.Migrate(ctx)
}
