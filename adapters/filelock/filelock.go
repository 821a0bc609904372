// Package filelock holds an exclusive advisory lock on a file (flock(2);
// LockFileEx on Windows) for as long as a process needs it: the kernel
// drops it when the process ends, however it ends, so a lock is never left
// behind by a crash.
package filelock

import (
	"errors"
	"fmt"
	"os"
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
	if err := tryLock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, ErrHeld) {
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
	return errors.Join(unlock(l.f), l.f.Close())
}
