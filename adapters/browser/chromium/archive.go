//go:build linux

package chromium

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
)

// singletonFiles tie a user-data directory to the host and process that
// had it open. A copy that carries them makes the next Chromium believe
// another one still runs the profile, and refuse to start on it.
var singletonFiles = []string{"SingletonLock", "SingletonCookie", "SingletonSocket"}

// unpack writes the tar.gz from src into dir. The service checked the
// archive when it was stored; this is a second line, and holds data stored
// under older rules to today's: only what browserdata.Kept keeps is written
// (an extension or a Local State stored before is left out), Preferences
// are cleaned by browserdata.CleanPreferences, and nothing lands outside
// dir whatever the archive says.
//
// Data the launch cannot use (names no filesystem holds, a name that is a
// file and a directory, a name twice, more entries than a profile has, an
// archive that is not a tar.gz) are a domain conflict naming the data and
// the cause: the profile's stored state, not the request, is at fault, and
// new data (or none) mend it. A failure to read src or to write dir is
// returned as it is.
func unpack(dir string, src io.Reader) error {
	rec := &sourceReader{r: src}
	zr, err := gzip.NewReader(rec)
	if err != nil {
		return rec.failure(err)
	}
	tr := tar.NewReader(zr)
	type dirTime struct {
		path string
		mod  time.Time
	}
	// Directory times are set last: writing a file into a directory
	// changes its modification time.
	var dirTimes []dirTime
	var tree browserdata.Tree
	kept := 0
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rec.failure(err)
		}
		name, err := browserdata.EntryName(hdr)
		if err != nil {
			return unusableData(err)
		}
		isDir := hdr.Typeflag == tar.TypeDir
		key := name
		if isDir {
			key += "/"
		}
		if name == "" || !browserdata.Kept(key) {
			continue
		}
		// Only what is written can clash, and only it costs the host.
		if err := tree.Add(name, isDir); err != nil {
			return unusableData(err)
		}
		if kept++; kept > browserdata.MaxEntries {
			return unusableData(fmt.Errorf("more than %d entries", browserdata.MaxEntries))
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch {
		case isDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			dirTimes = append(dirTimes, dirTime{target, hdr.ModTime})
		case name == browserdata.PreferencesName:
			if err := writePreferences(target, tr, hdr, rec); err != nil {
				return err
			}
		default:
			if err := writeFile(target, tr, hdr.ModTime); err != nil {
				return rec.failure(err)
			}
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		_ = os.Chtimes(dirTimes[i].path, dirTimes[i].mod, dirTimes[i].mod)
	}
	// Read the gzip trailer, so that a truncated archive is an error and
	// the caller's reader is read to its end.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return rec.failure(err)
	}
	if err := zr.Close(); err != nil {
		return rec.failure(err)
	}
	return nil
}

// writePreferences writes the Preferences entry cleaned; Preferences that
// are not JSON are left out, as the browser would reset them.
func writePreferences(target string, tr io.Reader, hdr *tar.Header, rec *sourceReader) error {
	if hdr.Size > browserdata.MaxPreferencesSize {
		return unusableData(fmt.Errorf("entry %q: larger than %d bytes", browserdata.PreferencesName, browserdata.MaxPreferencesSize))
	}
	raw := make([]byte, hdr.Size)
	if _, err := io.ReadFull(tr, raw); err != nil {
		return rec.failure(err)
	}
	clean, err := browserdata.CleanPreferences(raw)
	if errors.Is(err, browserdata.ErrUnreadablePreferences) {
		return nil
	}
	if err != nil {
		return unusableData(err)
	}
	return writeFile(target, bytes.NewReader(clean), hdr.ModTime)
}

// unusableData is the conflict of stored browser data the launch cannot
// use, naming the cause.
func unusableData(cause error) error {
	issue := cause.Error()
	var de *domain.Error
	if errors.As(cause, &de) && len(de.Fields) > 0 {
		issue = de.Fields[0].Issue
	}
	return domain.Conflict("the profile's browser data cannot be unpacked (" + issue + "); upload new browser data or delete them")
}

// sourceReader remembers the first failure of its reader other than
// io.EOF, to tell the blob store's failure (returned as it is) from data
// that are not a tar.gz (unusableData).
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF && s.err == nil {
		s.err = err
	}
	return n, err
}

// failure classifies an error met while unpacking: the source's own
// failure and the host's (a path error of the filesystem) are returned as
// they are; anything else is the archive's.
func (s *sourceReader) failure(err error) error {
	if s.err != nil {
		return fmt.Errorf("browser data: %w", s.err)
	}
	if pe := new(fs.PathError); errors.As(err, &pe) {
		return err
	}
	return unusableData(fmt.Errorf("not a readable tar.gz: %w", err))
}

func writeFile(target string, src io.Reader, mod time.Time) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return fmt.Errorf("browser data: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !mod.IsZero() {
		_ = os.Chtimes(target, mod, mod)
	}
	return nil
}

// removeSingletons deletes the lock files a previous browser left in dir.
func removeSingletons(dir string) error {
	for _, name := range singletonFiles {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// archive streams dir as a tar.gz: a goroutine walks the directory and
// writes into a pipe, so the directory is never held in memory. Closing it
// stops the walk and then runs release.
type archive struct {
	r       *io.PipeReader
	done    chan struct{}
	once    sync.Once
	release func() error
	err     error
}

func packDir(dir string, release func() error) *archive {
	pr, pw := io.Pipe()
	a := &archive{r: pr, done: make(chan struct{}), release: release}
	go func() {
		defer close(a.done)
		pw.CloseWithError(writeArchive(pw, dir))
	}()
	return a
}

func (a *archive) Read(p []byte) (int, error) { return a.r.Read(p) }

// Close ends the stream, waits for the walk to stop and releases the
// directory.
func (a *archive) Close() error {
	a.once.Do(func() {
		_ = a.r.CloseWithError(errors.New("browser data archive closed"))
		<-a.done
		a.err = a.release()
	})
	return a.err
}

// writeArchive writes the regular files and directories under dir that
// browserdata.Kept keeps, with names relative to it. The rest of what a
// browser leaves behind (caches, Local State, extensions, the singleton
// files, sockets, links) is left out here rather than by the service: a
// directory that is not kept is not even walked, and a session's archive
// never carries the tens of thousands of cache files that would count
// against the entries an archive may have.
func writeArchive(w io.Writer, dir string) error {
	zw := gzip.NewWriter(w)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		key := name
		if d.IsDir() {
			key += "/"
		}
		if !browserdata.Kept(key) {
			// Nothing under a directory that is not kept is kept.
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o700, ModTime: info.ModTime()})
		case info.Mode().IsRegular():
			return copyFile(tw, p, name, info)
		default:
			return nil
		}
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}

func copyFile(tw *tar.Writer, p, name string, info fs.FileInfo) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: info.Size(), ModTime: info.ModTime()}); err != nil {
		return err
	}
	// The header announced info.Size(); a file that changed since would
	// break the archive, so exactly that many bytes are written.
	n, err := io.Copy(tw, io.LimitReader(f, info.Size()))
	if err != nil {
		return err
	}
	if n < info.Size() {
		return fmt.Errorf("%s shrank while it was packed", name)
	}
	return nil
}
