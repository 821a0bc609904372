//go:build unix

package api_test

import "syscall"

// openFileLimit is how many files this process may have open (Go raises
// the soft limit to the hard one at start), or 0 when it cannot be read.
func openFileLimit() int {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return int(min(l.Cur, 1<<20))
}
