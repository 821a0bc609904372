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

// DeliveriesNotifier is told, once a unit that queued webhook deliveries
// has committed, that deliveries are due: the dispatchers (this instance's
// and the others') then claim them at once rather than at their next poll.
type DeliveriesNotifier interface {
	DeliveriesQueued()
}
