// Package clock owns the implementations of ports.Clock: the system clock used
// in production and a fake clock that tests move by hand, so expiries, windows
// and schedules are tested without waiting.
package clock

import (
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

var (
	_ ports.Clock = System{}
	_ ports.Clock = (*System)(nil)
	_ ports.Clock = (*Fake)(nil)
)

// System is the wall clock, in UTC so that every stored timestamp compares
// alike whatever the host's zone.
type System struct{}

// Now returns the current time in UTC.
func (System) Now() time.Time { return time.Now().UTC() }

// Fake is a clock that moves only when told to. It is safe for concurrent use.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a fake clock showing t (in UTC).
func NewFake(t time.Time) *Fake { return &Fake{now: t.UTC()} }

// Now returns the fake clock's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d (backwards when d is negative).
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// Set moves the clock to t (in UTC).
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = t.UTC()
}
