package chromium

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// singletonFiles tie a user-data directory to the host and process that
// had it open. A copy that carries them makes the next Chromium believe
// another one still runs the profile, and refuse to start on it.
var singletonFiles = []string{"SingletonLock", "SingletonCookie", "SingletonSocket"}

func isSingleton(name string) bool {
	for _, s := range singletonFiles {
		if name == s {
			return true
		}
	}
	return false
}

// unpack writes the tar.gz from src into dir. The service checked the
// archive when it was stored; this is a second line: only regular files
// and directories with clean relative names are written, so that nothing
// lands outside dir whatever the archive says.
func unpack(dir string, src io.Reader) error {
	zr, err := gzip.NewReader(src)
	if err != nil {
		return fmt.Errorf("browser data: %w", err)
	}
	tr := tar.NewReader(zr)
	type dirTime struct {
		path string
		mod  time.Time
	}
	// Directory times are set last: writing a file into a directory
	// changes its modification time.
	var dirTimes []dirTime
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("browser data: %w", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		if name == "" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			dirTimes = append(dirTimes, dirTime{target, hdr.ModTime})
		case tar.TypeReg:
			if err := writeFile(target, tr, hdr.ModTime); err != nil {
				return err
			}
		default:
			return fmt.Errorf("browser data: entry %q is neither a file nor a directory", hdr.Name)
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		_ = os.Chtimes(dirTimes[i].path, dirTimes[i].mod, dirTimes[i].mod)
	}
	// Read the gzip trailer, so that a truncated archive is an error and
	// the caller's reader is read to its end.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return fmt.Errorf("browser data: %w", err)
	}
	return zr.Close()
}

// entryName cleans an archive entry's name into a relative slash path,
// "" for the root, or refuses it.
func entryName(raw string) (string, error) {
	if raw == "" || strings.HasPrefix(raw, "/") || strings.ContainsAny(raw, "\\\x00") {
		return "", fmt.Errorf("browser data: entry name %q is not a relative path", raw)
	}
	for _, part := range strings.Split(raw, "/") {
		if part == ".." {
			return "", fmt.Errorf("browser data: entry name %q leaves the directory", raw)
		}
	}
	name := path.Clean(raw)
	if name == "." {
		return "", nil
	}
	return name, nil
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

// writeArchive writes the regular files and directories under dir, with
// names relative to it, leaving out the singleton files and anything else
// (sockets, links) a browser leaves behind.
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
		if isSingleton(d.Name()) {
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
