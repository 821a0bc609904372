package bunstore

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// WithQueryHook returns s seeing every statement bun runs through h.
func WithQueryHook(s *Store, h bun.QueryHook) *Store {
	return &Store{db: s.db.WithQueryHook(h), pool: s.pool, dialect: s.dialect, queryTimeout: s.queryTimeout, claims: s.claims, creates: s.creates}
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

// ProfileColumns are the columns of the profiles table as bun's model of
// a row names them, and those every read names (the PostgreSQL one then
// adds the proxy's view), in their orders.
func ProfileColumns(s *Store) (model, scanned []string) {
	for _, f := range s.db.Table(reflect.TypeFor[profileRow]()).Fields {
		model = append(model, f.Name)
	}
	for _, c := range strings.Split(profileRowColumns, ",") {
		c = strings.TrimSpace(c)
		if name, ok := strings.CutPrefix(c, "p."); ok {
			scanned = append(scanned, name)
		}
	}
	return model, scanned
}

// DecodeProfilesByHand sets whether PostgreSQL profile reads decode the
// results they can by hand (the default) or every result through pgx's
// Scan, until t ends.
func DecodeProfilesByHand(t testing.TB, byHand bool) {
	was := pgDecodeByHand
	pgDecodeByHand = byHand
	t.Cleanup(func() { pgDecodeByHand = was })
}

// ProfileFieldsDecodable says whether a profile read's result of these
// fields is decoded by hand.
func ProfileFieldsDecodable(fields []pgconn.FieldDescription) bool { return pgDecodable(fields) }

// ProfileReadByHand says whether s's PostgreSQL profile reads are decoded
// by hand: whether the result of the read, as pgx receives it, is one the
// hand decoder takes.
func ProfileReadByHand(ctx context.Context, s *Store) (bool, error) {
	rows, err := s.pool.Query(ctx, pgProfileSelect+` LIMIT 1`, pgx.QueryExecModeCacheStatement)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	rows.Next()
	return pgDecodable(rows.FieldDescriptions()), rows.Err()
}

// HoldCreates makes s's creates queue for a batch instead of running:
// queued says how many wait; release lets one worker send them, batch
// after batch.
func HoldCreates(s *Store) (queued func() int, release func()) {
	b := s.creates
	b.mu.Lock()
	b.workers = 0
	b.mu.Unlock()
	queued = func() int {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue)
	}
	release = func() {
		b.mu.Lock()
		b.workers = int(b.pool.Config().MaxConns)
		start := len(b.queue) > 0 && b.running == 0
		if start {
			b.running++
		}
		b.mu.Unlock()
		if start {
			go b.run()
		}
	}
	return queued, release
}
