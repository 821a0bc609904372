package conformance_test

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	blobpg "github.com/profilesvc/profilesvc/adapters/blob/postgres"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

func TestFilesBlobStore(t *testing.T) {
	conformance.RunBlobStore(t, func(t *testing.T) ports.BlobStore {
		s, err := files.New(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPostgresBlobStore(t *testing.T) {
	testenv.PostgresURL(t) // skips the suite when TEST_DATABASE_URL is unset
	conformance.RunBlobStore(t, func(t *testing.T) ports.BlobStore {
		s, err := bunstore.Open(context.Background(), testenv.StoreOptions(t, testenv.PostgresURL(t)))
		if err != nil {
			t.Fatalf("bunstore.Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Migrate(context.Background()); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return blobpg.New(s.DB())
	})
}
