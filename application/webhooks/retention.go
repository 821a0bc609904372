package webhooks

import "context"

// Prune deletes the deliveries that finished, and the dispatched outbox
// events that occurred, more than Policy.Retention ago, a batch of Policy.PruneBatch
// of each at a time until a batch comes back short, and returns how many
// rows it deleted. Events a pending delivery refers to stay. Every instance
// may run it: a batch that races another instance's deletes fewer rows and
// ends the run early, and the next run goes on.
func (s *Service) Prune(ctx context.Context) (int, error) {
	cutoff := s.d.Clock.Now().Add(-s.d.Policy.Retention)
	batch := s.d.Policy.PruneBatch
	total := 0
	for {
		n, err := s.d.Deliveries.Prune(ctx, cutoff, batch)
		total += n.Events + n.Deliveries
		if err != nil || (n.Events < batch && n.Deliveries < batch) {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
