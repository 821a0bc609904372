// Package browserdata holds the rules for a browser user-data archive (a
// tar.gz of Chromium's user-data directory): which entries are safe to
// store, which are caches to drop, and the limits that keep a hostile archive
// from exhausting the service.
package browserdata

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
)

// ErrTooLarge is wrapped by every error that reports a limit of Limits being
// passed; callers answer it with 413.
var ErrTooLarge = errors.New("browser data too large")

// Limits bound what Sanitize accepts; each must be set, a zero limit refuses
// every archive that has an entry. The compressed size is the caller's to
// bound, by wrapping the reader.
type Limits struct {
	// MaxUnpacked bounds the sum of the sizes of all regular files, dropped
	// caches included, as their headers announce them, so that a gzip bomb
	// is refused before it is expanded.
	MaxUnpacked int64
	// MaxEntries bounds the number of entries, dropped ones included.
	MaxEntries int
	// MaxPathLen bounds the length in bytes of an entry's name.
	MaxPathLen int
}

// Summary describes what Sanitize wrote.
type Summary struct {
	// Files and Dirs count the entries kept.
	Files int
	Dirs  int
	// BytesUnpacked is the total size of the files kept.
	BytesUnpacked int64
	// Dropped counts the entries left out as caches or lock files.
	Dropped int
}

// cacheDirs are the folders Chromium rebuilds on its own: an entry under a
// folder of one of these names, at any depth, is dropped.
var cacheDirs = map[string]bool{
	"Cache":                          true,
	"Code Cache":                     true,
	"GPUCache":                       true,
	"GrShaderCache":                  true,
	"GraphiteDawnCache":              true,
	"ShaderCache":                    true,
	"DawnCache":                      true,
	"DawnGraphiteCache":              true,
	"DawnWebGPUCache":                true,
	"Media Cache":                    true,
	"Application Cache":              true,
	"component_crx_cache":            true,
	"extensions_crx_cache":           true,
	"optimization_guide_model_store": true,
	"Crashpad":                       true,
}

// cacheSubdirs are cache folders recognised only inside a given parent.
var cacheSubdirs = map[[2]string]bool{
	{"Service Worker", "CacheStorage"}: true,
	{"Service Worker", "ScriptCache"}:  true,
}

// lockFiles tie a user-data directory to the host and process that had it
// open; a copy must not carry them.
var lockFiles = map[string]bool{
	"SingletonLock":   true,
	"SingletonSocket": true,
	"SingletonCookie": true,
	"lockfile":        true,
}

// Sanitize reads a tar.gz from src and writes to dst a normalised tar.gz of
// the same directory, streaming: no more than one block of the archive is
// held in memory.
//
// Entries that are neither regular files nor directories, names that are
// absolute, contain "..", a backslash or NUL, or are not UTF-8 are refused
// with a domain validation error naming the entry; a body that is not a
// tar.gz is refused the same way. Caches and lock files are dropped. Passing
// a limit is an error wrapping ErrTooLarge. An error of src itself (such as
// the caller's size bound) is returned as it is.
//
// The output keeps the order of the input and each entry's modification time
// (to the second: the browser compares some of them), and nothing else of
// its metadata: names are cleaned, modes are 0600 for files and 0700 for
// directories, owners are cleared, and the gzip header carries no name nor
// time, so that the same directory gives the same bytes.
func Sanitize(dst io.Writer, src io.Reader, limits Limits) (Summary, error) {
	var sum Summary
	rec := &errRecorder{r: src}
	zr, err := gzip.NewReader(rec)
	if err != nil {
		return sum, readFailure(rec, err)
	}
	wrec := &writeRecorder{w: dst}
	zw := gzip.NewWriter(wrec)
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(&boundedReader{r: zr, left: streamBound(limits)})
	var entries int
	var unpacked int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return sum, readFailure(rec, err)
		}
		entries++
		if entries > limits.MaxEntries {
			return sum, fmt.Errorf("%w: more than %d entries", ErrTooLarge, limits.MaxEntries)
		}
		if len(hdr.Name) > limits.MaxPathLen {
			return sum, fmt.Errorf("%w: an entry name is longer than %d bytes", ErrTooLarge, limits.MaxPathLen)
		}
		name, err := cleanName(hdr)
		if err != nil {
			return sum, err
		}
		if hdr.Typeflag == tar.TypeReg {
			if hdr.Size > limits.MaxUnpacked-unpacked {
				return sum, fmt.Errorf("%w: more than %d bytes unpacked", ErrTooLarge, limits.MaxUnpacked)
			}
			unpacked += hdr.Size
		}
		if name == "" {
			continue
		}
		if dropped(name) {
			sum.Dropped++
			continue
		}
		out := &tar.Header{Name: name, Typeflag: hdr.Typeflag, ModTime: hdr.ModTime.Truncate(time.Second)}
		if hdr.Typeflag == tar.TypeDir {
			out.Name += "/"
			out.Mode = 0o700
			sum.Dirs++
		} else {
			out.Mode = 0o600
			out.Size = hdr.Size
			sum.Files++
			sum.BytesUnpacked += hdr.Size
		}
		if err := tw.WriteHeader(out); err != nil {
			return sum, fmt.Errorf("write entry: %w", err)
		}
		if out.Size > 0 {
			if _, err := io.CopyN(tw, tr, out.Size); err != nil {
				if wrec.err != nil {
					return sum, fmt.Errorf("write entry: %w", wrec.err)
				}
				return sum, readFailure(rec, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return sum, fmt.Errorf("finish tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return sum, fmt.Errorf("finish gzip: %w", err)
	}
	return sum, nil
}

// cleanName checks an entry's type and name and returns the name cleaned and
// without a trailing slash; "" is the archive's root, which is left out.
func cleanName(hdr *tar.Header) (string, error) {
	raw := hdr.Name
	refuse := func(why string) error {
		return domain.Invalid("data", fmt.Sprintf("entry %q: %s", raw, why))
	}
	switch hdr.Typeflag {
	case tar.TypeReg, tar.TypeDir:
	case tar.TypeSymlink:
		return "", refuse("symbolic links are not allowed")
	case tar.TypeLink:
		return "", refuse("hard links are not allowed")
	case tar.TypeChar, tar.TypeBlock:
		return "", refuse("devices are not allowed")
	case tar.TypeFifo:
		return "", refuse("named pipes are not allowed")
	default:
		return "", refuse(fmt.Sprintf("entry type %q is not allowed: only files and directories", hdr.Typeflag))
	}
	switch {
	case !utf8.ValidString(raw):
		return "", refuse("the name is not UTF-8")
	case strings.ContainsRune(raw, 0):
		return "", refuse("the name contains NUL")
	case strings.ContainsRune(raw, '\\'):
		return "", refuse("the name contains a backslash")
	case strings.HasPrefix(raw, "/"):
		return "", refuse("absolute paths are not allowed")
	}
	var parts []string
	for _, p := range strings.Split(raw, "/") {
		switch p {
		case "", ".":
		case "..":
			return "", refuse(`".." is not allowed in a path`)
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 && hdr.Typeflag != tar.TypeDir {
		return "", refuse("a file needs a name")
	}
	return strings.Join(parts, "/"), nil
}

// dropped reports whether a cleaned name is a cache or a lock file.
func dropped(name string) bool {
	parts := strings.Split(name, "/")
	if lockFiles[parts[len(parts)-1]] {
		return true
	}
	for i, p := range parts {
		if cacheDirs[p] {
			return true
		}
		if i > 0 && cacheSubdirs[[2]string{parts[i-1], p}] {
			return true
		}
	}
	return false
}

// readFailure tells the source's own failure, returned as it is, from a body
// that is not a tar.gz.
func readFailure(rec *errRecorder, err error) error {
	if rec.err != nil {
		return rec.err
	}
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	return domain.Invalid("data", "the body is not a tar.gz: "+err.Error())
}

// Tar metadata allowed per entry besides its name (header block, PAX header
// block and records such as times and extended attributes, padding), and
// at the end of the archive (end blocks and the padding of the last record).
const (
	entryOverhead   = 8 << 10
	trailerOverhead = 20 << 10
)

// streamBound is how many bytes the decompressed tar stream may hold: the
// files themselves plus metadata for each entry, so that headers cannot be
// used to expand a bomb either.
func streamBound(l Limits) int64 {
	return l.MaxUnpacked + int64(l.MaxEntries)*(entryOverhead+2*int64(l.MaxPathLen)) + trailerOverhead
}

// boundedReader fails with ErrTooLarge once more than left bytes are read.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, fmt.Errorf("%w: the unpacked archive is larger than its files and their metadata may be", ErrTooLarge)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

// errRecorder remembers the first error of its reader other than io.EOF.
type errRecorder struct {
	r   io.Reader
	err error
}

func (e *errRecorder) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// writeRecorder remembers the first error of its writer, so that a failure
// to write is not taken for a bad archive.
type writeRecorder struct {
	w   io.Writer
	err error
}

func (e *writeRecorder) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}
