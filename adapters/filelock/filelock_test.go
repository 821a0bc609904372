package filelock_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/filelock"
)

func TestAcquireRefusesASecondHolderUntilTheFirstReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db.lock")
	first, err := filelock.Acquire(path)
	if err != nil {
		t.Fatalf("first Acquire: %v", err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("lock file mode %o, want 600", mode)
	}
	// flock locks belong to an open file, not to a process: a second open
	// in this process is refused as another process would be.
	if _, err := filelock.Acquire(path); !errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("second Acquire while the first holds: %v, want ErrHeld", err)
	}
	if err := first.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second, err := filelock.Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the release: %v", err)
	}
	if err := second.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

func TestAcquireReportsAnUnopenableFile(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := filelock.Acquire(filepath.Join(blocker, "db.lock"))
	if err == nil || errors.Is(err, filelock.ErrHeld) {
		t.Fatalf("Acquire under a file: %v, want an error other than ErrHeld", err)
	}
}
