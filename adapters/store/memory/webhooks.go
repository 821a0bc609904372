package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

type webhookEndpoints struct{ s *Store }

func (r webhookEndpoints) Create(ctx context.Context, e webhook.Endpoint) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.endpoints[e.ID]; taken {
			return domain.Conflict("a webhook endpoint with this id already exists")
		}
		put(undo, st.endpoints, e.ID, cloneEndpoint(e))
		addSortedID(undo, st.endpointsOf, e.TeamID, e.ID)
		return nil
	})
}

// endpointOf finds the team's endpoint: another team's is not found.
func (st *state) endpointOf(teamID, id string) (webhook.Endpoint, error) {
	e, ok := st.endpoints[id]
	if !ok || e.TeamID != teamID {
		return webhook.Endpoint{}, domain.NotFound("webhook endpoint")
	}
	return e, nil
}

func (r webhookEndpoints) ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error) {
	var e webhook.Endpoint
	err := r.s.read(ctx, func(st *state) error {
		found, err := st.endpointOf(teamID, id)
		if err != nil {
			return err
		}
		e = cloneEndpoint(found)
		return nil
	})
	return e, err
}

// List pages through the team's sorted ids, as profiles.List does.
func (r webhookEndpoints) List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error) {
	var out []webhook.Endpoint
	err := r.s.read(ctx, func(st *state) error {
		out = pageDown(st.endpointsOf[teamID], beforeID, limit, func(id string) (webhook.Endpoint, bool) {
			return cloneEndpoint(st.endpoints[id]), true
		})
		return nil
	})
	return out, err
}

// ListEnabled returns the endpoints in id order, oldest first.
func (r webhookEndpoints) ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
	var out []webhook.Endpoint
	err := r.s.read(ctx, func(st *state) error {
		out = []webhook.Endpoint{}
		for _, id := range st.endpointsOf[teamID] {
			if e := st.endpoints[id]; e.Enabled {
				out = append(out, cloneEndpoint(e))
			}
		}
		return nil
	})
	return out, err
}

// Update keeps the stored creation time: only the URL, events, sealed
// secret, enabled flag and UpdatedAt come from e.
func (r webhookEndpoints) Update(ctx context.Context, e webhook.Endpoint) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.endpointOf(e.TeamID, e.ID)
		if err != nil {
			return err
		}
		next := cur
		next.URL, next.Events, next.SecretSealed = e.URL, e.Events, e.SecretSealed
		next.Enabled, next.UpdatedAt = e.Enabled, e.UpdatedAt
		put(undo, st.endpoints, e.ID, cloneEndpoint(next))
		return nil
	})
}

func (r webhookEndpoints) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, err := st.endpointOf(teamID, id); err != nil {
			return err
		}
		remove(undo, st.endpoints, id)
		removeSortedID(undo, st.endpointsOf, teamID, id)
		key := endpointKey{teamID, id}
		for _, deliveryID := range st.deliveriesOf[key] {
			st.removeDelivery(undo, deliveryID)
		}
		remove(undo, st.deliveriesOf, key)
		return nil
	})
}

type deliveries struct{ s *Store }

func (r deliveries) Create(ctx context.Context, d webhook.Delivery) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.deliveries[d.ID]; taken {
			return domain.Conflict("a delivery with this id already exists")
		}
		st.putDelivery(undo, deliveryRow{d: cloneDelivery(d)})
		addSortedID(undo, st.deliveriesOf, endpointKey{d.TeamID, d.EndpointID}, d.ID)
		return nil
	})
}

func (r deliveries) ByID(ctx context.Context, teamID, id string) (webhook.Delivery, error) {
	var d webhook.Delivery
	err := r.s.read(ctx, func(st *state) error {
		row, ok := st.deliveries[id]
		if !ok || row.d.TeamID != teamID {
			return domain.NotFound("delivery")
		}
		d = cloneDelivery(row.d)
		return nil
	})
	return d, err
}

// List pages through the endpoint's sorted ids; a status other than the
// three matches nothing.
func (r deliveries) List(ctx context.Context, teamID, endpointID string, f webhookstore.DeliveryFilter) ([]webhook.Delivery, error) {
	var out []webhook.Delivery
	err := r.s.read(ctx, func(st *state) error {
		out = pageDown(st.deliveriesOf[endpointKey{teamID, endpointID}], f.BeforeID, f.Limit, func(id string) (webhook.Delivery, bool) {
			d := st.deliveries[id].d
			if f.Status != "" && d.Status != f.Status {
				return webhook.Delivery{}, false
			}
			return cloneDelivery(d), true
		})
		return nil
	})
	return out, err
}

// claimable reports whether a claim at now may lease the row.
func (row deliveryRow) claimable(now time.Time, excluded []string) bool {
	return row.d.Status == webhook.StatusPending &&
		!row.d.NextAttemptAt.After(now) &&
		(!row.leased || !row.leaseUntil.After(now)) &&
		!slices.Contains(excluded, row.d.EndpointID)
}

// Claim takes the due rows earliest first, skipping those of an endpoint
// that already has PerEndpoint in this claim, as the SQL stores' window
// function does. A limit or per-endpoint bound below one claims nothing.
func (r deliveries) Claim(ctx context.Context, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
	var out []webhook.Delivery
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		out = []webhook.Delivery{}
		if c.Limit < 1 || c.PerEndpoint < 1 {
			return nil
		}
		var due []deliveryRow
		for id := range st.pending {
			if row := st.deliveries[id]; row.claimable(c.Now, c.ExcludeEndpoints) {
				due = append(due, row)
			}
		}
		slices.SortFunc(due, func(a, b deliveryRow) int {
			return cmp.Or(a.d.NextAttemptAt.Compare(b.d.NextAttemptAt), cmp.Compare(a.d.ID, b.d.ID))
		})
		perEndpoint := map[string]int{}
		for _, row := range due {
			if len(out) == c.Limit {
				break
			}
			if perEndpoint[row.d.EndpointID] == c.PerEndpoint {
				continue
			}
			perEndpoint[row.d.EndpointID]++
			row.leased, row.leaseOwner, row.leaseUntil = true, c.Owner, c.LeaseUntil.UTC()
			st.putDelivery(undo, row)
			out = append(out, cloneDelivery(row.d))
		}
		return nil
	})
	return out, err
}

// Complete applies only while owner holds the lease, lapsed or not: a lapsed
// lease no other dispatcher has taken is still the owner's.
func (r deliveries) Complete(ctx context.Context, d webhook.Delivery, owner string) (bool, error) {
	completed := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		row, ok := st.deliveries[d.ID]
		if !ok || !row.leased || row.leaseOwner != owner {
			return nil
		}
		next := row.d
		next.Status, next.Attempts, next.RoundStart = d.Status, d.Attempts, d.RoundStart
		next.NextAttemptAt, next.UpdatedAt = d.NextAttemptAt, d.UpdatedAt
		st.putDelivery(undo, deliveryRow{d: cloneDelivery(next)})
		completed = true
		return nil
	})
	return completed, err
}

func (r deliveries) Requeue(ctx context.Context, d webhook.Delivery) (bool, error) {
	requeued := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		row, ok := st.deliveries[d.ID]
		if !ok || row.d.TeamID != d.TeamID || row.d.Status != webhook.StatusFailed {
			return nil
		}
		next := row.d
		next.Status, next.RoundStart = d.Status, d.RoundStart
		next.NextAttemptAt, next.UpdatedAt = d.NextAttemptAt, d.UpdatedAt
		st.putDelivery(undo, deliveryRow{d: cloneDelivery(next)})
		requeued = true
		return nil
	})
	return requeued, err
}

func (r deliveries) Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error) {
	err = r.s.read(ctx, func(st *state) error {
		for id := range st.pending {
			row := st.deliveries[id]
			if !ok || row.d.NextAttemptAt.Before(nextDue) {
				nextDue = row.d.NextAttemptAt
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

// putDelivery stores row and keeps the pending index in step with its
// status.
func (st *state) putDelivery(undo *undoLog, row deliveryRow) {
	put(undo, st.deliveries, row.d.ID, row)
	if row.d.Status == webhook.StatusPending {
		put(undo, st.pending, row.d.ID, struct{}{})
	} else {
		remove(undo, st.pending, row.d.ID)
	}
}

func (st *state) removeDelivery(undo *undoLog, id string) {
	remove(undo, st.deliveries, id)
	remove(undo, st.pending, id)
}
