// Package poll owns how a test waits for what another goroutine, process
// or instance brings about: it looks again every Interval until the
// condition holds, and fails the test with what it awaited once a deadline
// passes. It imports only the standard library, so a test of any layer may
// use it without learning about the service.
package poll

import (
	"errors"
	"testing"
	"time"
)

// Interval is how long a poll rests between looks: short enough that a
// test resumes soon after the condition holds, long enough that the race
// detector's slower goroutines get the processor.
const Interval = 5 * time.Millisecond

// Timeout is the deadline of Until: far beyond what any awaited effect
// takes on a loaded two-core machine, so only a real failure reaches it.
const Timeout = 10 * time.Second

// Until polls cond until it holds, and fails t with what was awaited when
// it has not held within Timeout.
func Until(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within is Until with a deadline of the caller's: for an effect whose
// time is itself what the test asserts, or that takes longer than Timeout.
func Within(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Check(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Check is Within for a condition that says what it still misses: check
// returns nil once it holds, and the test fails with its last error.
func Check(t testing.TB, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			if errors.Is(err, errNotYet) {
				t.Fatalf("timed out after %s waiting for %s", timeout, what)
			} else {
				t.Fatalf("timed out after %s waiting for %s: %v", timeout, what, err)
			}
			return
		}
		time.Sleep(Interval)
	}
}

// Throughout checks, every Interval for the whole of d, that nothing has
// happened that must not: check returns an error describing it, and the
// test fails at once with that error. It is for proving an absence, where
// no event exists to wait for.
func Throughout(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(Interval) {
		if err := check(); err != nil {
			t.Fatal(err)
			return
		}
	}
}

// errNotYet is what a boolean condition that does not hold yet reports.
var errNotYet = errors.New("not yet")
