//go:build unix

package main

import (
	"os"
	"syscall"
)

// drainSignals drain the instance: SIGTERM before it stops, keepUp while
// it stays up (a rolling deploy stops it later).
var (
	drainSignals           = []os.Signal{syscall.SIGTERM, syscall.SIGUSR1}
	keepUp       os.Signal = syscall.SIGUSR1
)
