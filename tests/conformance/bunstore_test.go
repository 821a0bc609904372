package conformance_test

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/ports/storage"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// newBunStore returns a factory of fresh, migrated stores, each on a database
// that newURL creates for the subtest.
func newBunStore(newURL func(testing.TB) string) conformance.NewStore {
	return func(t *testing.T) storage.Store {
		t.Helper()
		s, err := bunstore.Open(context.Background(), testenv.StoreOptions(t, newURL(t)))
		if err != nil {
			t.Fatalf("bunstore.Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return s
	}
}

func TestSQLiteStore(t *testing.T) {
	conformance.RunStore(t, newBunStore(testenv.SQLiteURL))
}

func TestPostgresStore(t *testing.T) {
	testenv.PostgresURL(t) // skips the suite when TEST_DATABASE_URL is unset
	conformance.RunStore(t, newBunStore(testenv.PostgresURL))
}
