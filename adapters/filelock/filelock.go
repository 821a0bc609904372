// Package filelock holds an exclusive advisory lock on a file (flock(2)) for
// as long as a process needs it: the kernel drops it when the process ends,
// however it ends, so a lock is never left behind by a crash.
package filelock

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ErrHeld is Acquire's error when someone else holds the lock: another
// process, or another Acquire of the same file in this one.
var ErrHeld = errors.New("the lock is held by another holder")

// Lock is one held lock.
type Lock struct{ f *os.File }

// Acquire takes the lock on path, creating the file (readable by its owner
// alone) if it does not exist. It does not wait: a lock held elsewhere is
// ErrHeld at once.
func Acquire(path string) (*Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := flock(f, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrHeld
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f}, nil
}

// Release lets the next holder in. The file stays: removing it would let a
// process that opened it just before lock a file nobody else can find.
func (l *Lock) Release() error {
	// Unlocking before closing releases the lock even if a child process
	// inherited the descriptor.
	return errors.Join(flock(l.f, unix.LOCK_UN), l.f.Close())
}

func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			ferr = unix.Flock(int(fd), how)
			if !errors.Is(ferr, unix.EINTR) {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
