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
		{"Local State", tar.TypeReg, 0o600, "state"},
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
	wantSum := Summary{Files: 5, Dirs: 1, BytesUnpacked: int64(len("cookie-db") + len(`{"a":1}`) + 2 + 5 + 5), Dropped: 6}
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
		entries = append(entries, entry{name: "d" + string(rune('a'+i)) + "/", typ: tar.TypeDir})
	}
	in := buildTarGz(t, entries)
	if _, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 100, MaxEntries: 5, MaxPathLen: 255}); err != nil {
		t.Fatalf("5 entries with a limit of 5: %v", err)
	}
	if _, err := Sanitize(io.Discard, bytes.NewReader(in), Limits{MaxUnpacked: 100, MaxEntries: 4, MaxPathLen: 255}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("5 entries with a limit of 4: err = %v, want ErrTooLarge", err)
	}
	long := buildTarGz(t, []entry{{name: strings.Repeat("p", 300), typ: tar.TypeReg, body: "x"}})
	if _, err := Sanitize(io.Discard, bytes.NewReader(long), testLimits); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("300-byte path with a limit of 255: err = %v, want ErrTooLarge", err)
	}
}

func TestSanitizePassesSourceErrorsThrough(t *testing.T) {
	in := buildTarGz(t, []entry{{name: "a", typ: tar.TypeReg, body: strings.Repeat("a", 100000)}})
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
	in := buildTarGz(t, []entry{{name: "a", typ: tar.TypeReg, body: strings.Repeat("a", 100000)}})
	full := errors.New("disk full")
	_, err := Sanitize(failingWriter{full}, bytes.NewReader(in), testLimits)
	if !errors.Is(err, full) || domain.IsKind(err, domain.KindValidation) {
		t.Fatalf("err = %v, want the writer's error and not a validation error", err)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
