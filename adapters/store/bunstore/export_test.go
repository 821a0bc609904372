package bunstore

import (
	"context"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

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
