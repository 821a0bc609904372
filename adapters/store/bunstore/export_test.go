package bunstore

import "github.com/uptrace/bun"

// WithQueryHook returns s seeing every statement through h, for tests that
// count round trips.
func WithQueryHook(s *Store, h bun.QueryHook) *Store {
	return &Store{db: s.db.WithQueryHook(h), dialect: s.dialect}
}
