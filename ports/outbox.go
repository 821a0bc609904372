package ports

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/event"
)

// Outbox receives the events of every module. An event appended inside a unit
// of work is committed (or dropped) with the rest of the unit, so nothing is
// published for a change that did not happen.
type Outbox interface {
	// Append adds e in the caller's unit of work.
	Append(ctx context.Context, e event.Event) error
}
