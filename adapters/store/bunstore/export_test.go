package bunstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
)

// WithQueryHook returns s seeing every statement bun runs through h.
func WithQueryHook(s *Store, h bun.QueryHook) *Store {
	return &Store{db: s.db.WithQueryHook(h), dialect: s.dialect, queryTimeout: s.queryTimeout}
}

// OpenTraced is Open with every statement pgx sends to PostgreSQL seen by
// tracer, for tests that count round trips.
func OpenTraced(ctx context.Context, o Options, tracer pgx.QueryTracer) (*Store, error) {
	o.tracer = tracer
	return Open(ctx, o)
}
