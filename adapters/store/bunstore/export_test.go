package bunstore

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// WithQueryHook returns s seeing every statement bun runs through h.
func WithQueryHook(s *Store, h bun.QueryHook) *Store {
	return &Store{db: s.db.WithQueryHook(h), pool: s.pool, dialect: s.dialect, queryTimeout: s.queryTimeout}
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

// CurrentXact reads the id of tx's transaction and its server process, as
// runTx reads them before COMMIT.
func CurrentXact(ctx context.Context, tx bun.Tx) (xid string, pid int, err error) {
	id, err := currentXact(ctx, tx)
	return id.xid.String, id.pid, err
}

// EndXact is endXact of the transaction xid run by the server process pid.
func EndXact(ctx context.Context, s *Store, xid string, pid int) (bool, error) {
	return endXact(ctx, s.db, pgXact{xid: sql.NullString{String: xid, Valid: true}, pid: pid})
}

// ResolveCommit is resolveCommit of the transaction xid run by the server
// process pid, whose COMMIT failed with commitErr.
func ResolveCommit(ctx context.Context, s *Store, xid string, pid int, commitErr error) error {
	return resolveCommit(ctx, s.db, pgXact{xid: sql.NullString{String: xid, Valid: true}, pid: pid}, commitErr)
}
