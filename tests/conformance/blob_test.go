package conformance_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	blobpg "github.com/profilesvc/profilesvc/adapters/blob/postgres"
	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/conformance"
	"github.com/profilesvc/profilesvc/tests/testenv"
	"github.com/uptrace/bun"
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
		return blobpg.New(s.DB(), 0)
	})
}

// newPostgresBlobStore returns a PostgreSQL blob store and its database.
func newPostgresBlobStore(t *testing.T) (*blobpg.Store, *bun.DB) {
	t.Helper()
	s, err := bunstore.Open(context.Background(), testenv.StoreOptions(t, testenv.PostgresURL(t)))
	if err != nil {
		t.Fatalf("bunstore.Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return blobpg.New(s.DB(), 0), s.DB()
}

func countChunks(t *testing.T, db *bun.DB) int {
	t.Helper()
	var n int
	if err := db.NewRaw("SELECT count(*) FROM blob_chunks").Scan(context.Background(), &n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPostgresBlobStoreKeepsNoChunksBehind(t *testing.T) {
	ctx := context.Background()
	s, db := newPostgresBlobStore(t)
	// 2.5 MiB: three chunks of at most 1 MiB.
	data := bytes.Repeat([]byte("0123456789"), 256<<10)
	for range 2 {
		if _, err := s.Put(ctx, bytes.NewReader(data), 4<<20); err != nil {
			t.Fatal(err)
		}
	}
	if got := countChunks(t, db); got != 3 {
		t.Fatalf("chunks after two Puts of the same content = %d, want 3", got)
	}
	if _, err := s.Put(ctx, bytes.NewReader(append(data, 'x')), 2<<20); !errors.Is(err, ports.ErrBlobTooLarge) {
		t.Fatalf("Put over the limit = %v", err)
	}
	failing := io.MultiReader(bytes.NewReader(data), iotest.ErrReader(errors.New("reset")))
	if _, err := s.Put(ctx, failing, 4<<20); err == nil {
		t.Fatal("Put of a failing reader succeeded")
	}
	if got := countChunks(t, db); got != 3 {
		t.Fatalf("chunks after failed Puts = %d, want 3", got)
	}
	info, err := s.Stat(ctx, conformanceSum(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, info.SHA256); err != nil {
		t.Fatal(err)
	}
	if got := countChunks(t, db); got != 0 {
		t.Fatalf("chunks after Delete = %d, want 0", got)
	}
}

func TestPostgresBlobStoreSweepsAbandonedChunks(t *testing.T) {
	ctx := context.Background()
	s, db := newPostgresBlobStore(t)
	kept, err := s.Put(ctx, strings.NewReader("kept"), 10)
	if err != nil {
		t.Fatal(err)
	}
	// What a crashed upload leaves: chunks no blobs row names, one old,
	// one of an upload that may still be in progress.
	if _, err := db.ExecContext(ctx, `INSERT INTO blob_chunks (upload_id, n, data, created_at) VALUES
		(-1, 0, 'old', now() - interval '25 hours'),
		(-2, 0, 'recent', now() - interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	// The kept blob's chunk is old too, and must stay.
	if _, err := db.ExecContext(ctx, `UPDATE blob_chunks SET created_at = now() - interval '48 hours' WHERE upload_id > 0`); err != nil {
		t.Fatal(err)
	}
	removed, err := s.RemoveAbandoned(ctx, blobpg.AbandonedAfter)
	if err != nil {
		t.Fatal(err)
	}
	if removed != 1 {
		t.Fatalf("removed %d chunks, want 1", removed)
	}
	var left []int64
	if err := db.NewRaw("SELECT upload_id FROM blob_chunks WHERE upload_id < 0").Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != -2 {
		t.Fatalf("abandoned chunks left = %v, want [-2]", left)
	}
	r, _, err := s.Open(ctx, kept.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got, err := io.ReadAll(r); err != nil || string(got) != "kept" {
		t.Fatalf("kept blob = %q, %v", got, err)
	}
}

func conformanceSum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}
