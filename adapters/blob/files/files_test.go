package files_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/blob/files"
)

func TestFilesAndDirectoriesAreOwnerOnly(t *testing.T) {
	root := filepath.Join(t.TempDir(), "blobs")
	s, err := files.New(root)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Put(context.Background(), strings.NewReader("abc"), 10)
	if err != nil {
		t.Fatal(err)
	}
	// sha256("abc"), sharded by its first two hex digits.
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if info.SHA256 != want {
		t.Fatalf("hash = %s", info.SHA256)
	}
	for path, mode := range map[string]os.FileMode{
		root:                            0o700 | os.ModeDir,
		filepath.Join(root, "tmp"):      0o700 | os.ModeDir,
		filepath.Join(root, "ba"):       0o700 | os.ModeDir,
		filepath.Join(root, "ba", want): 0o600,
	} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", path, st.Mode(), mode)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, "tmp")); len(entries) != 0 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestTemporaryFilesOfACrashAreRemovedOnceOld(t *testing.T) {
	root := t.TempDir()
	if _, err := files.New(root); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(root, "tmp", "put-crashed")
	recent := filepath.Join(root, "tmp", "put-in-progress")
	foreign := filepath.Join(root, "tmp", "notes.txt")
	for _, p := range []string{old, recent, foreign} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A folder someone left there, not empty: neither removed nor a
	// reason to refuse to start.
	dir := filepath.Join(root, "tmp", "put-dir")
	if err := os.MkdirAll(filepath.Join(dir, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-files.TempMaxAge - time.Minute)
	for _, p := range []string{old, foreign, dir} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := files.New(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old temporary file: %v, want it removed", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Errorf("recent temporary file: %v, want it kept (an upload may be in progress)", err)
	}
	for _, p := range []string{foreign, dir} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v, want it left alone", p, err)
		}
	}
}
