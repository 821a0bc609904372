package wiring

import (
	"context"
	"fmt"

	"go.uber.org/fx"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	blobpg "github.com/profilesvc/profilesvc/adapters/blob/postgres"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/config"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/storage"
)

// Blob provides the blob store of BLOB_URL, for browser data.
var Blob = fx.Module("blob", fx.Provide(NewBlobStore))

// NewBlobStore opens the blob store of cfg.Blob: files under a directory,
// or the PostgreSQL database of DATABASE_URL, whose chunks of abandoned
// uploads are swept once the database is migrated.
func NewBlobStore(lc fx.Lifecycle, cfg config.Config, store storage.Store, log *zap.Logger) (ports.BlobStore, error) {
	if cfg.Blob.Kind == config.BlobFiles {
		s, err := files.New(cfg.Blob.Dir)
		if err != nil {
			return nil, fmt.Errorf("BLOB_URL: %w", err)
		}
		return s, nil
	}
	sql, ok := store.(*bunstore.Store)
	if !ok || sql.Dialect() != bunstore.DialectPostgres {
		return nil, fmt.Errorf("BLOB_URL: postgres needs DATABASE_URL to be a PostgreSQL database")
	}
	s := blobpg.New(sql.DB(), cfg.DatabaseQueryTimeout)
	// Appended after the store's hook, which migrates: the tables exist.
	lc.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		removed, err := s.RemoveAbandoned(ctx, blobpg.AbandonedAfter)
		if err != nil {
			log.Warn("sweeping abandoned blob chunks failed", zap.Error(err))
			return nil
		}
		if removed > 0 {
			log.Info("abandoned blob chunks removed", zap.Int64("chunks", removed))
		}
		return nil
	}})
	return s, nil
}
