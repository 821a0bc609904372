package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

type webhookEndpoints struct{ s *Store }

func (r webhookEndpoints) Create(ctx context.Context, e webhook.Endpoint) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		return st.endpoints.insert(undo, e)
	})
}

func (r webhookEndpoints) ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error) {
	return readValue(ctx, r.s, func(st *state) (webhook.Endpoint, error) { return st.endpoints.inTeam(teamID, id) })
}

func (r webhookEndpoints) List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error) {
	return readValue(ctx, r.s, func(st *state) ([]webhook.Endpoint, error) {
		return st.endpoints.pageDown(teamID, beforeID, limit, all), nil
	})
}

func (r webhookEndpoints) Count(ctx context.Context, teamID string) (int, error) {
	return readValue(ctx, r.s, func(st *state) (int, error) {
		return len(st.endpoints.query(func(e *webhook.Endpoint) bool { return e.TeamID == teamID }, nil, unlimited)), nil
	})
}

// ListEnabled returns the endpoints oldest first, so that an append queues a
// team's deliveries in the same order every time.
func (r webhookEndpoints) ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
	return readValue(ctx, r.s, func(st *state) ([]webhook.Endpoint, error) {
		return st.endpoints.query(func(e *webhook.Endpoint) bool {
			return e.TeamID == teamID && e.Enabled
		}, st.endpoints.lowestIDFirst, unlimited), nil
	})
}

// Update keeps the stored creation time: only the URL, events, sealed
// secret, enabled flag and UpdatedAt come from e.
func (r webhookEndpoints) Update(ctx context.Context, e webhook.Endpoint) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		next, err := st.endpoints.inTeam(e.TeamID, e.ID)
		if err != nil {
			return err
		}
		next.URL, next.Events, next.SecretSealed = e.URL, e.Events, e.SecretSealed
		next.Enabled, next.UpdatedAt = e.Enabled, e.UpdatedAt
		next.MaxInFlight, next.RateLimit = e.MaxInFlight, e.RateLimit
		st.endpoints.put(undo, next)
		return nil
	})
}

// Delete takes the endpoint's deliveries with it, as the SQL stores' foreign
// key does.
func (r webhookEndpoints) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, err := st.endpoints.inTeam(teamID, id); err != nil {
			return err
		}
		st.endpoints.remove(undo, id)
		for _, row := range st.deliveries.query(ofEndpoint(teamID, id), nil, unlimited) {
			st.deliveries.remove(undo, row.d.ID)
		}
		return nil
	})
}

func ofEndpoint(teamID, endpointID string) func(*deliveryRow) bool {
	return func(row *deliveryRow) bool { return row.d.TeamID == teamID && row.d.EndpointID == endpointID }
}

type deliveries struct{ s *Store }

// Create stores all or none: a log of its own takes back the rows inserted
// before a clash, and on success hands its steps to the unit's.
func (r deliveries) Create(ctx context.Context, ds ...webhook.Delivery) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		var batch undoLog
		for _, d := range ds {
			if err := st.deliveries.insert(&batch, deliveryRow{d: d}); err != nil {
				batch.rollback()
				return err
			}
		}
		for _, step := range batch.steps {
			undo.record(step)
		}
		return nil
	})
}

func (r deliveries) ByID(ctx context.Context, teamID, id string) (webhook.Delivery, error) {
	row, err := readValue(ctx, r.s, func(st *state) (deliveryRow, error) { return st.deliveries.inTeam(teamID, id) })
	return row.d, err
}

// List: a status other than the three matches nothing.
func (r deliveries) List(ctx context.Context, teamID, endpointID string, f webhookstore.DeliveryFilter) ([]webhook.Delivery, error) {
	ofEndpoint := ofEndpoint(teamID, endpointID)
	rows, err := readValue(ctx, r.s, func(st *state) ([]deliveryRow, error) {
		return st.deliveries.pageDown(teamID, f.BeforeID, f.Limit, func(row *deliveryRow) bool {
			return ofEndpoint(row) && (f.Status == "" || row.d.Status == f.Status)
		}), nil
	})
	return deliveriesOf(rows), err
}

func deliveriesOf(rows []deliveryRow) []webhook.Delivery {
	out := make([]webhook.Delivery, len(rows))
	for i, row := range rows {
		out[i] = row.d
	}
	return out
}

// claimableAt is when a pending row can be claimed: when it is due, or
// when the lease it is under lapses, as the SQL stores' claimable_at.
func (row deliveryRow) claimableAt() time.Time {
	if row.leased && row.leaseUntil.After(row.d.NextAttemptAt) {
		return row.leaseUntil
	}
	return row.d.NextAttemptAt
}

// endpointBound is how many deliveries of endpointID a claim may take; -1
// is no bound.
func endpointBound(st *state, c webhookstore.DeliveryClaim, endpointID string) int {
	n := -1
	if room, ok := c.Room[endpointID]; ok {
		n = room
	} else if ep, err := st.endpoints.get(endpointID); err == nil && ep.MaxInFlight > 0 {
		n = ep.MaxInFlight
		if ep.RateLimit > 0 {
			n = min(n, ep.RateLimit)
		}
	}
	return n
}

// Claim takes the claimable rows earliest first, skipping those of an
// endpoint or a team at its bound in this claim, as the SQL stores do. A
// limit below one claims nothing.
func (r deliveries) Claim(ctx context.Context, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
	rows, err := writeValue(ctx, r.s, func(st *state, undo *undoLog) ([]deliveryRow, error) {
		if c.Limit < 1 {
			return nil, nil
		}
		due := st.deliveries.scanBacklog(func(row *deliveryRow) bool {
			return !row.claimableAt().After(c.Now) && !slices.Contains(c.ExcludeTeams, row.d.TeamID)
		}, func(a, b *deliveryRow) int {
			return cmp.Or(a.claimableAt().Compare(b.claimableAt()), cmp.Compare(a.d.ID, b.d.ID))
		})
		var claimed []deliveryRow
		perEndpoint, perTeam := map[string]int{}, map[string]int{}
		bounds := map[string]int{}
		for row := range due {
			if len(claimed) == c.Limit {
				break
			}
			bound, seen := bounds[row.d.EndpointID]
			if !seen {
				bound = endpointBound(st, c, row.d.EndpointID)
				bounds[row.d.EndpointID] = bound
			}
			if perEndpoint[row.d.EndpointID] == bound || (c.PerTeam > 0 && perTeam[row.d.TeamID] == c.PerTeam) {
				continue
			}
			perEndpoint[row.d.EndpointID]++
			perTeam[row.d.TeamID]++
			row.leased, row.leaseOwner, row.leaseUntil = true, c.Owner, c.LeaseUntil
			row.d.Started++
			st.deliveries.put(undo, row)
			claimed = append(claimed, cloneDeliveryRow(row))
		}
		// Taken in the order they became claimable, returned earliest due
		// first, as the SQL stores do.
		slices.SortFunc(claimed, func(a, b deliveryRow) int {
			return cmp.Or(a.d.NextAttemptAt.Compare(b.d.NextAttemptAt), cmp.Compare(a.d.ID, b.d.ID))
		})
		return claimed, nil
	})
	return deliveriesOf(rows), err
}

// Complete applies each only while owner holds the lease, lapsed or not: a
// lapsed lease no other dispatcher has taken is still the owner's.
func (r deliveries) Complete(ctx context.Context, owner string, ds ...webhook.Delivery) ([]bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) ([]bool, error) {
		applied := make([]bool, len(ds))
		for i, d := range ds {
			row, err := st.deliveries.get(d.ID)
			if err != nil || !row.leased || row.leaseOwner != owner {
				continue
			}
			next := row.d
			next.Status, next.Attempts, next.RoundStart = d.Status, d.Attempts, d.RoundStart
			next.NextAttemptAt, next.UpdatedAt = d.NextAttemptAt, d.UpdatedAt
			st.deliveries.put(undo, deliveryRow{d: next})
			applied[i] = true
		}
		return applied, nil
	})
}

func (r deliveries) Requeue(ctx context.Context, d webhook.Delivery) (bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (bool, error) {
		row, err := st.deliveries.inTeam(d.TeamID, d.ID)
		if err != nil || row.d.Status != webhook.StatusFailed {
			return false, nil
		}
		next := row.d
		next.Status, next.RoundStart = d.Status, d.RoundStart
		next.NextAttemptAt, next.UpdatedAt = d.NextAttemptAt, d.UpdatedAt
		st.deliveries.put(undo, deliveryRow{d: next})
		return true, nil
	})
}

// Pending only reads two times of each pending row, so it scans rather than
// copies them.
func (r deliveries) Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error) {
	err = r.s.read(ctx, func(st *state) error {
		for row := range st.deliveries.scanBacklog(all, nil) {
			if at := row.claimableAt(); !ok || at.Before(nextDue) {
				nextDue = at
			}
			if !ok || row.d.CreatedAt.Before(oldestCreated) {
				oldestCreated = row.d.CreatedAt
			}
			ok = true
		}
		return nil
	})
	if err != nil {
		return time.Time{}, time.Time{}, false, err
	}
	return nextDue, oldestCreated, ok, nil
}

// Prune deletes the oldest rows first, as the SQL stores do: deliveries by
// their last change, events by their dispatch.
func (r deliveries) Prune(ctx context.Context, cutoff time.Time, limit int) (webhookstore.Pruned, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (webhookstore.Pruned, error) {
		var out webhookstore.Pruned
		finished := st.deliveries.query(func(row *deliveryRow) bool {
			return (row.d.Status == webhook.StatusSucceeded || row.d.Status == webhook.StatusFailed) &&
				row.d.UpdatedAt.Before(cutoff)
		}, func(a, b *deliveryRow) int {
			return cmp.Or(a.d.UpdatedAt.Compare(b.d.UpdatedAt), cmp.Compare(a.d.ID, b.d.ID))
		}, limit)
		for _, row := range finished {
			st.deliveries.remove(undo, row.d.ID)
		}
		out.Deliveries = len(finished)

		waiting := map[string]bool{}
		for row := range st.deliveries.scanBacklog(all, nil) {
			waiting[row.d.EventID] = true
		}
		events := st.outbox.query(func(e *event.Event) bool {
			return e.OccurredAt.Before(cutoff) && !waiting[e.ID]
		}, func(a, b *event.Event) int {
			return cmp.Or(a.OccurredAt.Compare(b.OccurredAt), cmp.Compare(a.ID, b.ID))
		}, limit)
		for _, e := range events {
			st.outbox.remove(undo, e.ID)
		}
		out.Events = len(events)
		return out, nil
	})
}

// WebhookEndpoints returns the webhook endpoint repository.
func (s *Store) WebhookEndpoints() webhookstore.Endpoints { return webhookEndpoints{s: s} }

// Deliveries returns the delivery repository.
func (s *Store) Deliveries() webhookstore.Deliveries { return deliveries{s: s} }
