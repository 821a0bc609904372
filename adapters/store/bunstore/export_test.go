package bunstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// WithQueryHook returns s seeing every statement bun runs through h.
func WithQueryHook(s *Store, h bun.QueryHook) *Store {
	return &Store{db: s.db.WithQueryHook(h), pool: s.pool, dialect: s.dialect, queryTimeout: s.queryTimeout, claims: s.claims}
}

// OpenTraced is Open with every statement pgx sends to PostgreSQL seen by
// tracer, for tests that count round trips.
func OpenTraced(ctx context.Context, o Options, tracer pgx.QueryTracer) (*Store, error) {
	o.tracer = tracer
	return Open(ctx, o)
}

// DB is the store's database, for tests that set up rows in bulk.
func DB(s *Store) *bun.DB { return s.db }

// ExplainClaim runs the PostgreSQL claim c under EXPLAIN (ANALYZE, BUFFERS,
// FORMAT JSON), in a transaction it rolls back, and returns the plan.
func ExplainClaim(ctx context.Context, s *Store, c webhookstore.DeliveryClaim) ([]byte, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	var plan string
	err = tx.NewRaw("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ?", pgClaimQuery(tx, c)).Scan(ctx, &plan)
	return []byte(plan), err
}
