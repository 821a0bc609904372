package ports

import "time"

// Clock tells the time, so that expiries and schedules can be driven by a
// fake clock in tests.
type Clock interface {
	Now() time.Time
}
