//go:build !unix

package main

import (
	"os"
	"syscall"
)

// drainSignals drain the instance before it stops. No signal drains it
// and keeps it up on this system: keepUp is none.
var (
	drainSignals = []os.Signal{syscall.SIGTERM}
	keepUp       os.Signal
)
