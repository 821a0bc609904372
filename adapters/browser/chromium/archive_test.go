package chromium

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type entry struct {
	name string
	typ  byte
	body string
}

func tarGz(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o600, Size: int64(len(e.body))}
		if e.typ == tar.TypeSymlink {
			hdr.Linkname, hdr.Size = "/etc/passwd", 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := io.WriteString(tw, e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// archiveNames lists the entries of a tar.gz.
func archiveNames(t *testing.T, data []byte) map[string]bool {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the archive is not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	names := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return names
		}
		if err != nil {
			t.Fatalf("the archive is not a tar: %v", err)
		}
		if hdr.Typeflag != tar.TypeReg && hdr.Typeflag != tar.TypeDir {
			t.Errorf("the archive holds %q of type %c", hdr.Name, hdr.Typeflag)
		}
		names[hdr.Name] = true
	}
}

func TestUnpackWritesFilesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	data := tarGz(t,
		entry{name: "Default/", typ: tar.TypeDir},
		entry{name: "Default/Preferences", typ: tar.TypeReg, body: `{"a":1}`},
		entry{name: "./Local State", typ: tar.TypeReg, body: "state"},
		entry{name: "Default/Local Storage/leveldb/000003.log", typ: tar.TypeReg, body: "log"},
	)
	if err := unpack(dir, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"Default/Preferences": `{"a":1}`, "Local State": "state", "Default/Local Storage/leveldb/000003.log": "log"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
}

func TestUnpackRefusesWhatLeavesTheDirectory(t *testing.T) {
	for _, bad := range []entry{
		{name: "../escape", typ: tar.TypeReg, body: "x"},
		{name: "Default/../../escape", typ: tar.TypeReg, body: "x"},
		{name: "/etc/escape", typ: tar.TypeReg, body: "x"},
		{name: "Default/link", typ: tar.TypeSymlink},
		{name: "Default/fifo", typ: tar.TypeFifo},
	} {
		t.Run(bad.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "profile")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := unpack(dir, bytes.NewReader(tarGz(t, bad))); err == nil {
				t.Fatalf("unpack accepted %q", bad.name)
			}
			if _, err := os.Lstat(filepath.Join(root, "escape")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("something was written outside the directory: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "Default", "link")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a link was written: %v", err)
			}
		})
	}
}

func TestUnpackRefusesATruncatedArchive(t *testing.T) {
	data := tarGz(t, entry{name: "Default/Preferences", typ: tar.TypeReg, body: strings.Repeat("p", 4096)})
	if err := unpack(t.TempDir(), bytes.NewReader(data[:len(data)-10])); err == nil {
		t.Fatal("unpack accepted a truncated archive")
	}
}

func TestPackLeavesOutSingletonsAndSockets(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "profile")
	for name, body := range map[string]string{"Default/Preferences": "prefs", "Local State": "state", "SingletonCookie": "c"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("host-123", filepath.Join(dir, "SingletonLock")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "Default", "socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	released := false
	a := packDir(dir, func() error { released = true; return os.RemoveAll(root) })
	data, err := io.ReadAll(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	names := archiveNames(t, data)
	want := map[string]bool{"Default/": true, "Default/Preferences": true, "Local State": true}
	if len(names) != len(want) {
		t.Errorf("the archive holds %v, want %v", names, want)
	}
	for name := range want {
		if !names[name] {
			t.Errorf("the archive lacks %s: %v", name, names)
		}
	}
	if !released {
		t.Error("closing the archive did not release the directory")
	}
	// What was packed unpacks to the same files.
	again := t.TempDir()
	if err := unpack(again, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(again, "Default", "Preferences")); err != nil || string(got) != "prefs" {
		t.Errorf("Default/Preferences after a round trip: %q, %v", got, err)
	}
}

func TestClosingAnUnreadArchiveStopsTheWalk(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big"), bytes.Repeat([]byte{1}, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	released := false
	a := packDir(dir, func() error { released = true; return nil })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !released {
		t.Error("closing an unread archive did not release the directory")
	}
}
