// Package files keeps blobs as files under a directory (DATA_DIR/blobs):
// each blob at <root>/<first two hex digits>/<sha256>, written first to a
// temporary file under <root>/tmp (same file system), fsynced, renamed into
// place and its directory fsynced, so that a blob is only ever visible
// complete and durable. A crash mid-write leaves only a temporary file,
// removed at the next start once older than TempMaxAge.
package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/adapters/blob"
	"github.com/profilesvc/profilesvc/ports"
)

// TempMaxAge is the age past which a temporary file is taken for the
// remains of a crash; it is longer than any upload may last, so that an
// instance starting beside another sharing the directory never removes an
// upload in progress.
const TempMaxAge = 24 * time.Hour

// tempPrefix starts the name of every temporary file.
const tempPrefix = "put-"

// Store is a ports.BlobStore on a local directory.
type Store struct {
	root string
}

var _ ports.BlobStore = (*Store)(nil)

// New opens (creating it, mode 0700) the blob directory root and removes
// the temporary files older than TempMaxAge.
func New(root string) (*Store, error) {
	s := &Store{root: root}
	if err := os.MkdirAll(s.tmpDir(), 0o700); err != nil {
		return nil, fmt.Errorf("blob directory: %w", err)
	}
	entries, err := os.ReadDir(s.tmpDir())
	if err != nil {
		return nil, fmt.Errorf("blob directory: %w", err)
	}
	for _, e := range entries {
		// Only the store's own temporary files: whatever else someone put
		// there is theirs.
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < TempMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(s.tmpDir(), e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("blob directory: %w", err)
		}
	}
	return s, nil
}

func (s *Store) tmpDir() string { return filepath.Join(s.root, "tmp") }

func (s *Store) path(sum string) string { return filepath.Join(s.root, sum[:2], sum) }

// Put implements ports.BlobStore.
func (s *Store) Put(ctx context.Context, r io.Reader, maxBytes int64) (ports.BlobInfo, error) {
	tmp, err := os.CreateTemp(s.tmpDir(), tempPrefix+"*")
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	// Until the rename, the temporary file is removed on every way out.
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	in := blob.NewReader(ctx, r, maxBytes)
	if _, err := io.Copy(tmp, in); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	info := in.Info()
	final := s.path(info.SHA256)
	if _, err := os.Stat(final); err == nil {
		return info, nil
	}
	if err := tmp.Sync(); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	dir := filepath.Dir(final)
	// A new shard directory must itself survive a crash: its parent is
	// fsynced too.
	if err := os.Mkdir(dir, 0o700); err == nil {
		if err := syncDir(s.root); err != nil {
			return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
		}
	} else if !errors.Is(err, fs.ErrExist) {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	// Concurrent Puts of the same content rename identical files onto the
	// same name, which is atomic: readers see one or the other, both whole.
	if err := os.Rename(tmp.Name(), final); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	return info, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Open implements ports.BlobStore.
func (s *Store) Open(_ context.Context, sum string) (io.ReadCloser, ports.BlobInfo, error) {
	if err := blob.CheckHash(sum); err != nil {
		return nil, ports.BlobInfo{}, err
	}
	f, err := os.Open(s.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ports.BlobInfo{}, blob.NotFound()
	}
	if err != nil {
		return nil, ports.BlobInfo{}, fmt.Errorf("blob open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, ports.BlobInfo{}, fmt.Errorf("blob open: %w", err)
	}
	return f, ports.BlobInfo{SHA256: sum, Size: st.Size()}, nil
}

// Stat implements ports.BlobStore.
func (s *Store) Stat(_ context.Context, sum string) (ports.BlobInfo, error) {
	if err := blob.CheckHash(sum); err != nil {
		return ports.BlobInfo{}, err
	}
	st, err := os.Stat(s.path(sum))
	if errors.Is(err, fs.ErrNotExist) {
		return ports.BlobInfo{}, blob.NotFound()
	}
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob stat: %w", err)
	}
	return ports.BlobInfo{SHA256: sum, Size: st.Size()}, nil
}

// Delete implements ports.BlobStore.
func (s *Store) Delete(_ context.Context, sum string) error {
	if err := blob.CheckHash(sum); err != nil {
		return err
	}
	if err := os.Remove(s.path(sum)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob delete: %w", err)
	}
	return nil
}
