package webhooks

import (
	"context"
	"slices"

	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

// Append is the outbox every module writes its events to (ports.Outbox).
// In the caller's unit of work it stores e and queues its delivery to each
// enabled endpoint of e's team that wants its type, so that an event and
// its deliveries commit together or not at all: nothing is left to fan out
// later, by this instance or another. An endpoint takes the events written
// once it has committed. When the unit commits with deliveries queued, the
// dispatchers are told (Deps.Queued).
func (s *Service) Append(ctx context.Context, e event.Event) error {
	if err := s.d.Outbox.Append(ctx, e); err != nil {
		return err
	}
	endpoints, err := s.d.Endpoints.ListEnabled(ctx, e.TeamID)
	if err != nil {
		return err
	}
	var queued []webhook.Delivery
	var payload []byte
	now := s.d.Clock.Now()
	for _, ep := range endpoints {
		if !ep.Wants(e.Type) {
			continue
		}
		if payload == nil {
			if payload, err = webhook.Payload(e); err != nil {
				return err
			}
		}
		queued = append(queued, webhook.NewDelivery(s.d.IDs.New("dlv"), ep, e, payload, s.d.Policy.Schedule, now))
	}
	if len(queued) == 0 {
		return nil
	}
	for batch := range slices.Chunk(queued, createBatch) {
		if err := s.d.Deliveries.Create(ctx, batch...); err != nil {
			return err
		}
	}
	s.queued(ctx)
	return nil
}

// queued tells the dispatchers (Deps.Queued), once ctx's unit has
// committed, that it queued deliveries: those of events, a test event's,
// a retried one.
func (s *Service) queued(ctx context.Context) {
	unit.OnCommit(ctx, func(context.Context) { s.d.Queued.DeliveriesQueued() })
}

// createBatch bounds the deliveries one INSERT writes, so that a team with
// many endpoints does not make one statement of unbounded size.
const createBatch = 500
