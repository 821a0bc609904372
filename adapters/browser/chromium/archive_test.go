//go:build linux

package chromium

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/domain"
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
		entry{name: "./Default/Network/Cookies", typ: tar.TypeReg, body: "cookies"},
		entry{name: "Default/Local Storage/leveldb/000003.log", typ: tar.TypeReg, body: "log"},
	)
	if err := unpack(dir, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Default/":                                 "",
		"Default/Preferences":                      `{"a":1}`,
		"Default/Network/":                         "",
		"Default/Network/Cookies":                  "cookies",
		"Default/Local Storage/":                   "",
		"Default/Local Storage/leveldb/":           "",
		"Default/Local Storage/leveldb/000003.log": "log",
	}
	if got := dirFiles(t, dir); !maps.Equal(got, want) {
		t.Errorf("unpacked %q, want %q", got, want)
	}
}

// dirFiles lists what dir holds: a file's name to its content, and each
// directory's name with a trailing slash.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		if d.IsDir() {
			out[name+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[name] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// extensionArchive is a profile that an extension took over: the extension
// and its storage, its settings in Preferences and Secure Preferences, a
// proxy set to direct, a chrome://flags experiment in Local State, and a
// second profile; beside them, cookies and local storage that are the
// profile's data. Data stored before the allowlist may look like this.
func extensionArchive(t *testing.T) []byte {
	const id = "aapocclcgogkmnckokdopfmhonfmgoek"
	return tarGz(t,
		entry{name: "Local State", typ: tar.TypeReg, body: `{"browser":{"enabled_labs_experiments":["enable-quic@2"]}}`},
		entry{name: "Default/", typ: tar.TypeDir},
		entry{name: "Default/Network/Cookies", typ: tar.TypeReg, body: "cookies"},
		entry{name: "Default/Local Storage/leveldb/000003.log", typ: tar.TypeReg, body: "log"},
		entry{name: "Default/Preferences", typ: tar.TypeReg, body: `{"extensions":{"settings":{"` + id + `":{"path":"` + id + `/1.0_0","location":4}}},` +
			`"proxy":{"mode":"direct"},"profile":{"name":"Shop"},"webrtc":{"ip_handling_policy":"default_public_interface_only"}}`},
		entry{name: "Default/Secure Preferences", typ: tar.TypeReg, body: `{"extensions":{"settings":{}}}`},
		entry{name: "Default/Extensions/" + id + "/1.0_0/manifest.json", typ: tar.TypeReg, body: `{"permissions":["proxy","<all_urls>"]}`},
		entry{name: "Default/Extensions/" + id + "/1.0_0/background.js", typ: tar.TypeReg, body: `chrome.proxy.settings.set({value:{mode:"direct"}})`},
		entry{name: "Default/Local Extension Settings/" + id + "/000003.log", typ: tar.TypeReg, body: "extension storage"},
		entry{name: "Default/Extension State/000003.log", typ: tar.TypeReg, body: "extension state"},
		entry{name: "Profile 1/Preferences", typ: tar.TypeReg, body: `{"proxy":{"mode":"direct"}}`},
	)
}

func TestUnpackLeavesOutExtensionsAndConfiguration(t *testing.T) {
	dir := t.TempDir()
	if err := unpack(dir, bytes.NewReader(extensionArchive(t))); err != nil {
		t.Fatal(err)
	}
	if err := enforcePreferences(dir); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Default/":                                 "",
		"Default/Network/":                         "",
		"Default/Network/Cookies":                  "cookies",
		"Default/Local Storage/":                   "",
		"Default/Local Storage/leveldb/":           "",
		"Default/Local Storage/leveldb/000003.log": "log",
		"Default/Preferences":                      `{"profile":{"name":"Shop"},"webrtc":{"ip_handling_policy":"disable_non_proxied_udp","multiple_routes_enabled":false,"nonproxied_udp_enabled":false}}`,
	}
	if got := dirFiles(t, dir); !maps.Equal(got, want) {
		t.Errorf("unpacked\n%q\nwant\n%q", got, want)
	}
}

// assertUnusable checks that err is the conflict of data the launch
// cannot use, naming the cause.
func assertUnusable(t *testing.T, err error, cause string) {
	t.Helper()
	if !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("err = %v, want a conflict", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "browser data") || !strings.Contains(msg, cause) {
		t.Fatalf("err = %q, want it to name the browser data and %q", msg, cause)
	}
}

func TestUnpackRefusesDataItCannotUnpack(t *testing.T) {
	file := func(name string) entry { return entry{name: name, typ: tar.TypeReg, body: "x"} }
	cases := []struct {
		name    string
		entries []entry
		cause   string
	}{
		{"a file and a file inside it", []entry{file("Default/IndexedDB/x"), file("Default/IndexedDB/x/y")}, `"Default/IndexedDB/x" is a file in the archive`},
		{"a file inside a file", []entry{file("Default/IndexedDB/x/y"), file("Default/IndexedDB/x")}, `entry "Default/IndexedDB/x" is both a file and a directory`},
		{"a name twice", []entry{file("Default/Cookies"), file("Default/./Cookies")}, `entry "Default/Cookies" appears twice`},
		{"a component no filesystem holds", []entry{file("Default/Local Storage/" + strings.Repeat("a", 256))}, "more than the 255 a file name may have"},
		{"Preferences over the bound", []entry{{name: "Default/Preferences", typ: tar.TypeReg, body: `{"a":"` + strings.Repeat("x", 4<<20) + `"}`}}, `entry "Default/Preferences": larger than 4194304 bytes`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := unpack(t.TempDir(), bytes.NewReader(tarGz(t, c.entries...)))
			assertUnusable(t, err, c.cause)
		})
	}
	t.Run("not gzip", func(t *testing.T) {
		err := unpack(t.TempDir(), strings.NewReader("PK\x03\x04 a zip"))
		assertUnusable(t, err, "not a readable tar.gz")
	})
}

// TestUnpackIgnoresClashesOfWhatItLeavesOut: entries that are not written
// cannot clash on disk.
func TestUnpackIgnoresClashesOfWhatItLeavesOut(t *testing.T) {
	dir := t.TempDir()
	data := tarGz(t,
		entry{name: "Default/Extensions", typ: tar.TypeReg, body: "x"},
		entry{name: "Default/Extensions/a/manifest.json", typ: tar.TypeReg, body: "{}"},
		entry{name: "Local State", typ: tar.TypeReg, body: "{}"},
		entry{name: "Local State", typ: tar.TypeReg, body: "{}"},
		entry{name: "Default/Cookies", typ: tar.TypeReg, body: "cookies"},
	)
	if err := unpack(dir, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if got, want := dirFiles(t, dir), map[string]string{"Default/": "", "Default/Cookies": "cookies"}; !maps.Equal(got, want) {
		t.Errorf("unpacked %q, want %q", got, want)
	}
}

func TestUnpackRefusesMoreEntriesThanAProfileHas(t *testing.T) {
	// Stored before the bound: 20,001 directories where any are kept
	// (directories, as the cheapest entries to write). Not compressed:
	// compressing takes seconds under the race detector.
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.NoCompression)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for i := range 20_001 {
		if err := tw.WriteHeader(&tar.Header{Name: "Default/IndexedDB/" + strconv.Itoa(i) + "/", Typeflag: tar.TypeDir, Mode: 0o700}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	assertUnusable(t, unpack(t.TempDir(), &buf), "more than 20000 entries")
}

// TestUnpackPassesSourceErrorsThrough: a blob store that fails mid-read is
// the service's trouble, not the data's.
func TestUnpackPassesSourceErrorsThrough(t *testing.T) {
	data := tarGz(t, entry{name: "Default/Cookies", typ: tar.TypeReg, body: strings.Repeat("c", 100_000)})
	gone := errors.New("blob store connection lost")
	err := unpack(t.TempDir(), io.MultiReader(bytes.NewReader(data[:len(data)/2]), failingReader{gone}))
	if !errors.Is(err, gone) || domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("err = %v, want the source's error and no conflict", err)
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

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
			err := unpack(dir, bytes.NewReader(tarGz(t, bad)))
			assertUnusable(t, err, strconv.Quote(bad.name))
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
	err := unpack(t.TempDir(), bytes.NewReader(data[:len(data)-10]))
	assertUnusable(t, err, "not a readable tar.gz")
}

func TestPackLeavesOutWhatIsNotKept(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "profile")
	for name, body := range map[string]string{"Default/Preferences": `{"profile":{"name":"A"}}`, "Local State": "state", "SingletonCookie": "c",
		"Default/Cache/Cache_Data/data_0": "cached", "Default/Extensions/a/1.0/manifest.json": "{}"} {
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
	// Only what a profile keeps: no Local State, cache nor extension.
	want := map[string]bool{"Default/": true, "Default/Preferences": true}
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
	if got, err := os.ReadFile(filepath.Join(again, "Default", "Preferences")); err != nil || string(got) != `{"profile":{"name":"A"}}` {
		t.Errorf("Default/Preferences after a round trip: %q, %v", got, err)
	}
}

func TestClosingAnUnreadArchiveStopsTheWalk(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "Default", "Local Storage", "big")
	if err := os.MkdirAll(filepath.Dir(big), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bytes.Repeat([]byte{1}, 1<<20), 0o600); err != nil {
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
