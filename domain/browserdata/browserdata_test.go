package browserdata

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
)

type entry struct {
	name     string
	typ      byte
	body     string
	linkname string
	mode     int64
}

func buildTarGz(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: mode, Linkname: e.linkname,
			ModTime: mtime, Uid: 1000, Gid: 1000, Uname: "alice", Gname: "alice", Format: tar.FormatPAX}
		if e.typ == tar.TypeReg {
			hdr.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatalf("header %q: %v", e.name, err)
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

type outEntry struct {
	hdr  tar.Header
	body string
}

func readTarGz(t *testing.T, data []byte) []outEntry {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("output is not gzip: %v", err)
	}
	tr := tar.NewReader(zr)
	var out []outEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("output is not tar: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, outEntry{*hdr, string(body)})
	}
}

var testLimits = Limits{MaxUnpacked: 1 << 20, MaxEntries: 1000, MaxPathLen: 255}

func TestSanitizeRoundTripDropsCaches(t *testing.T) {
	in := buildTarGz(t, []entry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "Default/", typ: tar.TypeDir, mode: 0o755},
		{name: "Default/Cookies", typ: tar.TypeReg, body: "cookie-db", mode: 0o644},
		{name: "./Default//Preferences", typ: tar.TypeReg, body: `{"a":1}`, mode: 0o755},
		{name: "Default/Local Storage/leveldb/000003.log", typ: tar.TypeReg, body: "ls"},
		{name: "Default/Cache/", typ: tar.TypeDir},
		{name: "Default/Cache/Cache_Data/data_0", typ: tar.TypeReg, body: "cached"},
		{name: "Default/Code Cache/js/index", typ: tar.TypeReg, body: "x"},
		{name: "GrShaderCache/data_1", typ: tar.TypeReg, body: "x"},
		{name: "Default/Service Worker/CacheStorage/abc/index", typ: tar.TypeReg, body: "x"},
		{name: "Default/Service Worker/Database/000001.log", typ: tar.TypeReg, body: "sw-db"},
		{name: "SingletonLock", typ: tar.TypeReg, body: "host-1"},
		{name: "Local State", typ: tar.TypeReg, body: "state"},
	})
	var out bytes.Buffer
	sum, err := Sanitize(&out, bytes.NewReader(in), testLimits)
	if err != nil {
		t.Fatalf("Sanitize: %v", err)
	}
	got := readTarGz(t, out.Bytes())
	want := []struct {
		name string
		typ  byte
		mode int64
		body string
	}{
		{"Default/", tar.TypeDir, 0o700, ""},
		{"Default/Cookies", tar.TypeReg, 0o600, "cookie-db"},
		{"Default/Preferences", tar.TypeReg, 0o600, `{"a":1}`},
		{"Default/Local Storage/leveldb/000003.log", tar.TypeReg, 0o600, "ls"},
		{"Default/Service Worker/Database/000001.log", tar.TypeReg, 0o600, "sw-db"},
	}
	if len(got) != len(want) {
		names := make([]string, len(got))
		for i, g := range got {
			names[i] = g.hdr.Name
		}
		t.Fatalf("got %d entries %q, want %d", len(got), names, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.hdr.Name != w.name || g.hdr.Typeflag != w.typ || g.hdr.Mode != w.mode || g.body != w.body {
			t.Errorf("entry %d = {%q %c %o %q}, want {%q %c %o %q}", i,
				g.hdr.Name, g.hdr.Typeflag, g.hdr.Mode, g.body, w.name, w.typ, w.mode, w.body)
		}
		if g.hdr.Uid != 0 || g.hdr.Gid != 0 || g.hdr.Uname != "" || g.hdr.Gname != "" {
			t.Errorf("entry %q keeps an owner: %d/%d %q/%q", g.hdr.Name, g.hdr.Uid, g.hdr.Gid, g.hdr.Uname, g.hdr.Gname)
		}
		if !g.hdr.ModTime.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
			t.Errorf("entry %q mtime %v, want the original", g.hdr.Name, g.hdr.ModTime)
		}
	}
	// Local State is off the allowlist: dropped with the caches.
	wantSum := Summary{Files: 4, Dirs: 1, BytesUnpacked: int64(len("cookie-db") + len(`{"a":1}`) + len("ls") + len("sw-db")), Dropped: 7}
	if sum != wantSum {
		t.Errorf("summary %+v, want %+v", sum, wantSum)
	}

	// The output is a fixed point: sanitising it again gives the same bytes.
	var again bytes.Buffer
	if _, err := Sanitize(&again, bytes.NewReader(out.Bytes()), testLimits); err != nil {
		t.Fatalf("second Sanitize: %v", err)
	}
	if !bytes.Equal(again.Bytes(), out.Bytes()) {
		t.Error("sanitising the output again changed its bytes")
	}
}

func TestSanitizeRefusesUnsafeEntries(t *testing.T) {
	cases := []struct {
		name    string
		entries []entry
		field   string
	}{
		{"absolute path", []entry{{name: "/etc/passwd", typ: tar.TypeReg, body: "x"}}, "/etc/passwd"},
		{"dot-dot", []entry{{name: "Default/../../evil", typ: tar.TypeReg, body: "x"}}, "Default/../../evil"},
		{"dot-dot directory", []entry{{name: "../", typ: tar.TypeDir}}, "../"},
		{"symlink", []entry{{name: "Default/link", typ: tar.TypeSymlink, linkname: "/etc/passwd"}}, "Default/link"},
		{"hard link", []entry{{name: "Default/a", typ: tar.TypeReg, body: "x"}, {name: "Default/hl", typ: tar.TypeLink, linkname: "Default/a"}}, "Default/hl"},
		{"char device", []entry{{name: "dev/null", typ: tar.TypeChar}}, "dev/null"},
		{"block device", []entry{{name: "dev/sda", typ: tar.TypeBlock}}, "dev/sda"},
		{"fifo", []entry{{name: "fifo", typ: tar.TypeFifo}}, "fifo"},
		{"invalid utf-8", []entry{{name: "Default/\xff\xfe", typ: tar.TypeReg, body: "x"}}, "Default/\xff\xfe"},
		{"backslash", []entry{{name: `..\..\evil`, typ: tar.TypeReg, body: "x"}}, `..\..\evil`},
		{"link inside a cache is still refused", []entry{{name: "Default/Cache/l", typ: tar.TypeSymlink, linkname: "/"}}, "Default/Cache/l"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := buildTarGz(t, tc.entries)
			_, err := Sanitize(io.Discard, bytes.NewReader(in), testLimits)
			assertInvalid(t, err, strconv.Quote(tc.field))
		})
	}
}

func assertInvalid(t *testing.T, err error, wantInField string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation {
		t.Fatalf("err = %v, want a validation error", err)
	}
	if errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v is also too large", err)
	}
	found := false
	for _, f := range de.Fields {
		if strings.Contains(f.Field, wantInField) || strings.Contains(f.Issue, wantInField) {
			found = true
		}
	}
	if !found {
		t.Fatalf("err = %v does not name %q", err, wantInField)
	}
}

func TestSanitizeRefusesWhatIsNotTarGz(t *testing.T) {
	var gzText bytes.Buffer
	zw := gzip.NewWriter(&gzText)
	_, _ = io.WriteString(zw, strings.Repeat("this is not a tar archive at all\n", 40))
	_ = zw.Close()
	valid := buildTarGz(t, []entry{{name: "a", typ: tar.TypeReg, body: strings.Repeat("a", 5000)}})
	cases := map[string][]byte{
		"empty":        nil,
		"not gzip":     []byte("PK\x03\x04 a zip file"),
		"gzip of text": gzText.Bytes(),
		"truncated":    valid[:len(valid)/2],
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Sanitize(io.Discard, bytes.NewReader(in), testLimits)
			assertInvalid(t, err, "tar.gz")
		})
	}
}

// zeros is an endless reader of zero bytes that allocates nothing.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// bomb streams, through a pipe, a tar.gz holding one file that claims size
// bytes of zeros; it is compressed as it is read, so the test never holds
// it. The returned stop ends the writer.
func bomb(t *testing.T, size int64) (io.Reader, func()) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestCompression)
		tw := tar.NewWriter(zw)
		if err := tw.WriteHeader(&tar.Header{Name: "Default/Cookies", Typeflag: tar.TypeReg, Mode: 0o600, Size: size}); err != nil {
			pw.CloseWithError(err)
			return
		}
		if _, err := io.CopyN(tw, zeros{}, size); err != nil {
			pw.CloseWithError(err)
			return
		}
		_ = tw.Close()
		pw.CloseWithError(zw.Close())
	}()
	return pr, func() {
		_ = pr.CloseWithError(errors.New("reader done"))
		<-done
	}
}

func TestSanitizeRefusesGzipBombWithoutExpandingIt(t *testing.T) {
	src, stop := bomb(t, 1<<30)
	defer stop()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Sanitize(io.Discard, src, Limits{MaxUnpacked: 64 << 20, MaxEntries: 100, MaxPathLen: 255})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if grown := after.TotalAlloc - before.TotalAlloc; grown > 16<<20 {
		t.Errorf("Sanitize allocated %d bytes on a bomb, want under 16 MiB", grown)
	}
}

func TestSanitizeTotalUnpackedLimit(t *testing.T) {
	var entries []entry
	for i := range 10 {
		entries = append(entries, entry{name: "f" + string(rune('a'+i)), typ: tar.TypeReg, body: strings.Repeat("z", 1000)})
	}
	in := buildTarGz(t, entries)
	if _, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 10000, MaxEntries: 100, MaxPathLen: 255}); err != nil {
		t.Fatalf("exactly at the limit: %v", err)
	}
	_, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 9999, MaxEntries: 100, MaxPathLen: 255})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("one byte past the limit: err = %v, want ErrTooLarge", err)
	}
	// Dropped caches count too: they are expanded to be skipped.
	cached := buildTarGz(t, []entry{{name: "Cache/data", typ: tar.TypeReg, body: strings.Repeat("c", 2000)}})
	_, err = Sanitize(io.Discard, bytes.NewReader(cached), Limits{MaxUnpacked: 1000, MaxEntries: 100, MaxPathLen: 255})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("cache past the limit: err = %v, want ErrTooLarge", err)
	}
}

func TestSanitizeEntryAndPathLimits(t *testing.T) {
	var entries []entry
	for i := range 5 {
		entries = append(entries, entry{name: "Default/IndexedDB/d" + string(rune('a'+i)) + "/", typ: tar.TypeDir})
	}
	in := buildTarGz(t, entries)
	if _, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 100, MaxEntries: 5, MaxPathLen: 255}); err != nil {
		t.Fatalf("5 entries with a limit of 5: %v", err)
	}
	// A count and a name are not sizes: 422 naming the cause, not 413.
	_, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 100, MaxEntries: 4, MaxPathLen: 255})
	assertInvalid(t, err, "more than 4 entries")
	long := buildTarGz(t, []entry{{name: "Default/IndexedDB/" + strings.Repeat("p", 200) + "/" + strings.Repeat("q", 100), typ: tar.TypeReg, body: "x"}})
	_, err = Sanitize(io.Discard, bytes.NewReader(long), testLimits)
	assertInvalid(t, err, "longer than 255 bytes")
}

func TestSanitizePassesSourceErrorsThrough(t *testing.T) {
	in := buildTarGz(t, []entry{{name: "Default/Local Storage/a", typ: tar.TypeReg, body: strings.Repeat("a", 100000)}})
	cut := errors.New("body over PROFILE_DATA_MAX")
	src := io.MultiReader(bytes.NewReader(in[:len(in)/2]), iotestErr{cut})
	_, err := Sanitize(io.Discard, src, testLimits)
	if !errors.Is(err, cut) {
		t.Fatalf("err = %v, want the source's own error", err)
	}
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

func TestSanitizeCountsMetadataTowardsTheLimit(t *testing.T) {
	// Tar metadata (PAX records) is expanded too: headers that carry far
	// more than names and times are refused like a bomb.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for i := range 3 {
		hdr := &tar.Header{Name: "f" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o600, Size: 1,
			PAXRecords: map[string]string{"comment": strings.Repeat("m", 900<<10)}}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Sanitize(io.Discard, bytes.NewReader(buf.Bytes()), Limits{MaxUnpacked: 1 << 20, MaxEntries: 10, MaxPathLen: 255})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

func TestSanitizeReportsWriteErrorsAsSuch(t *testing.T) {
	in := buildTarGz(t, []entry{{name: "Default/Local Storage/a", typ: tar.TypeReg, body: strings.Repeat("a", 100000)}})
	full := errors.New("disk full")
	_, err := Sanitize(failingWriter{full}, bytes.NewReader(in), testLimits)
	if !errors.Is(err, full) || domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("err = %v, want the writer's error and not a validation error", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// extensionArchive is a profile that an extension took over: the extension
// itself, its storage, its settings in Preferences and in Secure
// Preferences, a proxy set to direct, and a chrome://flags experiment in
// Local State; beside them, a cookie database that is the profile's data.
func extensionArchive(t *testing.T) []byte {
	const id = "aapocclcgogkmnckokdopfmhonfmgoek"
	return buildTarGz(t, []entry{
		{name: "Local State", typ: tar.TypeReg, body: `{"browser":{"enabled_labs_experiments":["enable-quic@2"]}}`},
		{name: "Default/", typ: tar.TypeDir},
		{name: "Default/Cookies", typ: tar.TypeReg, body: "cookie-db"},
		{name: "Default/Preferences", typ: tar.TypeReg, body: `{"extensions":{"settings":{"` + id + `":{"path":"` + id + `/1.0_0","location":4}}},"proxy":{"mode":"direct"},"profile":{"name":"Shop"}}`},
		{name: "Default/Secure Preferences", typ: tar.TypeReg, body: `{"extensions":{"settings":{}}}`},
		{name: "Default/Extensions/", typ: tar.TypeDir},
		{name: "Default/Extensions/" + id + "/1.0_0/manifest.json", typ: tar.TypeReg, body: `{"permissions":["proxy","<all_urls>"]}`},
		{name: "Default/Extensions/" + id + "/1.0_0/background.js", typ: tar.TypeReg, body: `chrome.proxy.settings.set({value:{mode:"direct"}})`},
		{name: "Default/Local Extension Settings/" + id + "/000003.log", typ: tar.TypeReg, body: "ext-storage"},
		{name: "Default/Storage/ext/" + id + "/def/Cookies", typ: tar.TypeReg, body: "ext-cookies"},
		{name: "Profile 1/Preferences", typ: tar.TypeReg, body: `{}`},
	})
}

func TestSanitizeKeepsNoExtensionNorConfiguration(t *testing.T) {
	var out bytes.Buffer
	sum, err := Sanitize(&out, bytes.NewReader(extensionArchive(t)), testLimits)
	if err != nil {
		t.Fatalf("Sanitize: %v", err)
	}
	got := map[string]string{}
	for _, e := range readTarGz(t, out.Bytes()) {
		got[e.hdr.Name] = e.body
	}
	want := map[string]string{
		"Default/":            "",
		"Default/Cookies":     "cookie-db",
		"Default/Preferences": `{"profile":{"name":"Shop"}}`,
	}
	if len(got) != len(want) {
		t.Fatalf("kept %q, want %q", got, want)
	}
	for name, body := range want {
		if b, ok := got[name]; !ok || b != body {
			t.Errorf("%s = %q (present %v), want %q", name, b, ok, body)
		}
	}
	wantSum := Summary{Files: 2, Dirs: 1, BytesUnpacked: int64(len("cookie-db") + len(`{"profile":{"name":"Shop"}}`)), Dropped: 8}
	if sum != wantSum {
		t.Errorf("summary %+v, want %+v", sum, wantSum)
	}
}

func TestSanitizeDropsPreferencesThatAreNotJSON(t *testing.T) {
	in := buildTarGz(t, []entry{
		{name: "Default/Preferences", typ: tar.TypeReg, body: `{"profile":`},
		{name: "Default/Cookies", typ: tar.TypeReg, body: "cookie-db"},
	})
	var out bytes.Buffer
	sum, err := Sanitize(&out, bytes.NewReader(in), testLimits)
	if err != nil {
		t.Fatalf("Sanitize: %v", err)
	}
	got := readTarGz(t, out.Bytes())
	if len(got) != 1 || got[0].hdr.Name != "Default/Cookies" || got[0].body != "cookie-db" {
		t.Fatalf("kept %+v, want Default/Cookies alone", got)
	}
	if want := (Summary{Files: 1, BytesUnpacked: 9, Dropped: 1}); sum != want {
		t.Errorf("summary %+v, want %+v", sum, want)
	}
}

func TestSanitizeRefusesPreferencesOverTheBound(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 4<<20-7) + `"}`
	in := buildTarGz(t, []entry{{name: "Default/Preferences", typ: tar.TypeReg, body: big}})
	_, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 64 << 20, MaxEntries: 10, MaxPathLen: 255})
	assertInvalid(t, err, `entry "Default/Preferences": larger than 4194304 bytes`)
}

func TestSanitizeRefusesWhatCannotBeUnpacked(t *testing.T) {
	file := func(name string) entry { return entry{name: name, typ: tar.TypeReg, body: "x"} }
	dir := func(name string) entry { return entry{name: name, typ: tar.TypeDir} }
	cases := []struct {
		name    string
		entries []entry
		want    string
	}{
		{"a file and a directory inside it", []entry{file("Default/x"), file("Default/x/y")}, `"Default/x" is a file in the archive`},
		{"a kept file that is also a directory", []entry{file("Default/Cookies"), dir("Default/Cookies/")}, `entry "Default/Cookies" is both a file and a directory`},
		{"a name twice", []entry{file("Default/Cookies"), file("./Default/Cookies")}, `entry "Default/Cookies" appears twice`},
		{"a dropped name twice", []entry{file("Local State"), file("Local State")}, `entry "Local State" appears twice`},
		{"a component longer than a file name may be", []entry{file("Default/Local Storage/" + strings.Repeat("a", 256))}, "more than the 255 a file name may have"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Sanitize(io.Discard, bytes.NewReader(buildTarGz(t, c.entries)), Limits{MaxUnpacked: 1 << 20, MaxEntries: 10, MaxPathLen: 1024})
			assertInvalid(t, err, c.want)
		})
	}
}

// manyEntries streams a tar.gz of n empty files under Default/IndexedDB,
// where any number of files would be kept: some 1.4 MB for 199,000
// entries, compressed only as it is read (compressing all of it takes half
// a minute under the race detector). written tells how many entries the
// writer has made so far; stop ends it.
func manyEntries(t *testing.T, n int) (src io.Reader, written func() int, stop func()) {
	t.Helper()
	pr, pw := io.Pipe()
	var made atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		tw := tar.NewWriter(zw)
		for i := range n {
			if err := tw.WriteHeader(&tar.Header{Name: "Default/IndexedDB/" + strconv.Itoa(i), Typeflag: tar.TypeReg, Mode: 0o600}); err != nil {
				pw.CloseWithError(err)
				return
			}
			made.Add(1)
		}
		if err := tw.Close(); err != nil {
			pw.CloseWithError(err)
			return
		}
		pw.CloseWithError(zw.Close())
	}()
	return pr, func() int { return int(made.Load()) }, func() {
		_ = pr.CloseWithError(errors.New("reader done"))
		<-done
	}
}

func TestSanitizeRefusesTooManyEntriesEarly(t *testing.T) {
	src, written, stop := manyEntries(t, 199_000)
	defer stop()
	_, err := Sanitize(io.Discard, src, Limits{MaxUnpacked: 1 << 30, MaxEntries: MaxEntries, MaxPathLen: MaxNameLen})
	assertInvalid(t, err, "more than 20000 entries")
	// The writer runs ahead of Sanitize by what the pipe and the gzip and
	// tar readers buffer, some thousands of entries at most; had Sanitize
	// read on, it would have made all 199,000.
	if n := written(); n >= 100_000 {
		t.Fatalf("the archive was read to its %d-th entry, want it stopped near the 20,001st", n)
	}
}
