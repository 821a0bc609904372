// Package browserdata holds the rules for a browser user-data archive (a
// tar.gz of Chromium's user-data directory): browser data are data, not
// configuration. It owns the allowlist of what a profile keeps (Kept), the
// preferences that are configuration and are removed (CleanPreferences),
// which entries are safe to store at all, and the limits that keep a
// hostile archive from exhausting the service or the hosts that unpack it.
// The upload (Sanitize) and the browser runtime apply the same rules.
package browserdata

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/domain"
)

// ErrTooLarge is wrapped by every error that reports a size in bytes being
// passed (Limits.MaxUnpacked, or tar metadata beyond what the entries may
// carry); callers answer it with 413. The other bounds (entries, names,
// Preferences) are domain validation errors naming the cause.
var ErrTooLarge = errors.New("browser data too large")

// Limits bound what Sanitize accepts; each must be set, a zero limit refuses
// every archive that has an entry. The compressed size is the caller's to
// bound, by wrapping the reader.
type Limits struct {
	// MaxUnpacked bounds the sum of the sizes of all regular files, dropped
	// caches included, as their headers announce them, so that a gzip bomb
	// is refused before it is expanded.
	MaxUnpacked int64
	// MaxEntries bounds the number of entries, dropped ones included: each
	// must be read to be dropped.
	MaxEntries int
	// MaxPathLen bounds the length in bytes of an entry's name; EntryName
	// holds every name to MaxNameLen in any case.
	MaxPathLen int
}

// Summary describes what Sanitize wrote.
type Summary struct {
	// Files and Dirs count the entries kept.
	Files int
	Dirs  int
	// BytesUnpacked is the total size of the files kept.
	BytesUnpacked int64
	// Dropped counts the entries left out: caches, lock files, anything
	// Kept does not keep, and Preferences that are not JSON.
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
// the same directory with only what a profile keeps, streaming: no more
// than one block of the archive is held in memory, and Default/Preferences.
//
// Entries that are neither regular files nor directories, names that
// EntryName refuses, a name given twice or as a file and a directory, more
// than Limits.MaxEntries entries, names longer than Limits.MaxPathLen and
// Preferences over MaxPreferencesSize are refused with a domain validation
// error naming field "data" and the cause; a body that is not a tar.gz is
// refused the same way. Entries that Kept leaves out (caches, lock files,
// extensions, anything off the allowlist) are dropped, and so are
// Preferences that are not JSON: the browser would reset them.
// Default/Preferences is rewritten by CleanPreferences. Passing
// Limits.MaxUnpacked is an error wrapping ErrTooLarge. An error of src
// itself (such as the caller's size bound) is returned as it is.
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
	var tree Tree
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return sum, readFailure(rec, err)
		}
		entries++
		// Refused at the first entry past the bound: the rest of an
		// archive of a million entries is never read.
		if entries > limits.MaxEntries {
			return sum, domain.Invalid("data", fmt.Sprintf("the archive has more than %d entries; a profile's data have far fewer (leave caches out)", limits.MaxEntries))
		}
		if len(hdr.Name) > limits.MaxPathLen {
			return sum, domain.Invalid("data", fmt.Sprintf("entry %s: the name is longer than %d bytes", quoteEntry(hdr.Name), limits.MaxPathLen))
		}
		name, err := EntryName(hdr)
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
		dir := hdr.Typeflag == tar.TypeDir
		// Every entry counts, kept or not: an archive that cannot be
		// unpacked as it says is refused, not half taken.
		if err := tree.Add(name, dir); err != nil {
			return sum, err
		}
		key := name
		if dir {
			key += "/"
		}
		if !Kept(key) {
			sum.Dropped++
			continue
		}
		out := &tar.Header{Name: key, Typeflag: hdr.Typeflag, ModTime: hdr.ModTime.Truncate(time.Second)}
		var body io.Reader = tr
		if dir {
			out.Mode = 0o700
			sum.Dirs++
		} else {
			out.Mode = 0o600
			out.Size = hdr.Size
			if name == PreferencesName {
				prefs, err := readPreferences(tr, hdr.Size, rec)
				if errors.Is(err, ErrUnreadablePreferences) {
					sum.Dropped++
					continue
				}
				if err != nil {
					return sum, err
				}
				out.Size, body = int64(len(prefs)), bytes.NewReader(prefs)
			}
			sum.Files++
			sum.BytesUnpacked += out.Size
		}
		if err := tw.WriteHeader(out); err != nil {
			return sum, fmt.Errorf("write entry: %w", err)
		}
		if out.Size > 0 {
			if _, err := io.CopyN(tw, body, out.Size); err != nil {
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

// readPreferences reads the Preferences entry of size bytes and cleans it;
// its size is checked before anything is read.
func readPreferences(r io.Reader, size int64, rec *errRecorder) ([]byte, error) {
	if size > MaxPreferencesSize {
		return nil, preferencesTooLarge()
	}
	raw := make([]byte, size)
	if _, err := io.ReadFull(r, raw); err != nil {
		return nil, readFailure(rec, err)
	}
	return CleanPreferences(raw)
}

// dropped reports whether a cleaned name is a cache, or in one, or a lock
// file (a directory of that name is not one).
func dropped(name string, dir bool) bool {
	parts := strings.Split(name, "/")
	if !dir && lockFiles[parts[len(parts)-1]] {
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
