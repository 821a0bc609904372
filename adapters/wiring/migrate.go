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
	return s.Migrate(ctx)
}
