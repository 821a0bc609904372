package wiring

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx/fxtest"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/config"
)

func TestBlobStoreFollowsTheConfiguration(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "blobs")
	cfg := config.Config{Blob: config.Blob{Kind: config.BlobFiles, Dir: dir}}
	s, err := NewBlobStore(fxtest.NewLifecycle(t), cfg, memory.New(), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*files.Store); !ok {
		t.Fatalf("store = %T, want *files.Store", s)
	}
	info, err := s.Put(context.Background(), strings.NewReader("abc"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, info.SHA256[:2], info.SHA256)); err != nil {
		t.Fatalf("blob not under BLOB_URL's directory: %v", err)
	}

	cfg.Blob = config.Blob{Kind: config.BlobPostgres}
	if _, err := NewBlobStore(fxtest.NewLifecycle(t), cfg, memory.New(), zap.NewNop()); err == nil {
		t.Fatal("a PostgreSQL blob store on the memory store was accepted")
	}
}
