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

// EventsNotifier is told, once a unit that appended events has committed,
// that there are events to fan out: the webhook dispatchers (this
// instance's and the others') then take them at once rather than at their
// next poll. A use case registers it with the unit (application/unit
// OnCommit) where it appends.
type EventsNotifier interface {
	EventsCommitted()
}
