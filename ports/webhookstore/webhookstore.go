// Package webhookstore is the storage port of application/webhooks: a team's
// endpoints, and the deliveries of events to them with the leases
// dispatchers hold.
//
// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.
package webhookstore

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/webhook"
)

// Endpoints stores a team's webhook endpoints.
type Endpoints interface {
	Create(ctx context.Context, e webhook.Endpoint) error
	// ByID returns an endpoint of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error)
	// List returns up to limit endpoints of the team with an id lower than
	// beforeID ("" for the first page), newest first.
	List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error)
	// Count returns how many endpoints the team has, enabled or not.
	Count(ctx context.Context, teamID string) (int, error)
	// ListEnabled returns every enabled endpoint of the team, for the
	// deliveries of its events.
	ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error)
	// Update replaces url, events, sealed secret, enabled, max in flight,
	// rate limit and updated time.
	Update(ctx context.Context, e webhook.Endpoint) error
	// Delete removes the endpoint and its deliveries.
	Delete(ctx context.Context, teamID, id string) error
}

// DeliveryFilter selects a page of an endpoint's deliveries, newest first.
type DeliveryFilter struct {
	// Status keeps deliveries in that state; "" keeps all.
	Status webhook.Status
	// BeforeID keeps deliveries with an id lower than it ("" from the newest).
	BeforeID string
	Limit    int
}

// DeliveryClaim asks for due deliveries to attempt.
type DeliveryClaim struct {
	// Owner names the claiming dispatcher (one per process).
	Owner string
	// Now: deliveries whose NextAttemptAt is at or before it are due.
	Now time.Time
	// LeaseUntil is when the claim lapses if the owner never completes it,
	// so another dispatcher attempts the delivery again.
	LeaseUntil time.Time
	Limit      int
	// Room bounds the deliveries of the endpoints it lists, in place of
	// their own bound: what the owner may still start for them, given what
	// it has in flight and their rate limits (0: none). An endpoint it does
	// not list is bounded by its stored MaxInFlight, and by its RateLimit
	// when it has one (a dispatcher with no attempt to it lately has a full
	// second of attempts in hand). An endpoint bounds nothing when it is
	// not stored or its MaxInFlight is 0.
	Room map[string]int
	// PerTeam bounds the deliveries of one team in one claim (0: no bound),
	// and ExcludeTeams are teams the owner has enough in flight for, so that
	// one team's receivers that never answer cannot take every worker.
	PerTeam      int
	ExcludeTeams []string
}

// Deliveries stores deliveries and leases them to dispatchers.
type Deliveries interface {
	// Create stores the deliveries together (one statement where the store
	// can), all or none.
	Create(ctx context.Context, ds ...webhook.Delivery) error
	// ByID returns a delivery of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (webhook.Delivery, error)
	List(ctx context.Context, teamID, endpointID string, f DeliveryFilter) ([]webhook.Delivery, error)
	// Claim leases up to c.Limit pending, due deliveries whose lease is
	// free or lapsed, earliest due first, at most the endpoint's bound (see
	// Room) of one endpoint and c.PerTeam of one team, none of an excluded
	// team. It counts the attempt on each
	// delivery it leases (Started). Concurrent claims, from any instance,
	// never return the same delivery while its lease holds (PostgreSQL:
	// FOR UPDATE SKIP LOCKED). Its cost does not grow with the number of
	// deliveries waiting, only with the endpoints they wait for.
	Claim(ctx context.Context, c DeliveryClaim) ([]webhook.Delivery, error)
	// Complete stores each delivery's status, attempts, round start, next
	// attempt and updated time and frees its lease, if owner still holds
	// it, in one statement where the store can. applied[i] is false when
	// ds[i]'s lease lapsed and another dispatcher took the delivery.
	Complete(ctx context.Context, owner string, ds ...webhook.Delivery) (applied []bool, err error)
	// Requeue stores a retried delivery (status, round start, next attempt,
	// updated time) if it is still failed; false otherwise.
	Requeue(ctx context.Context, d webhook.Delivery) (bool, error)
	// Pending reports when the next pending delivery can be claimed (its
	// NextAttemptAt, or the end of the lease it is under) and the earliest
	// CreatedAt of pending deliveries across teams; ok is false when none
	// is pending.
	Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error)
	// Prune deletes, in one call, up to limit succeeded or failed deliveries
	// last updated before cutoff, and up to limit outbox events that
	// occurred before cutoff and that no pending delivery (leased or not)
	// refers to, oldest (by update, by occurrence) first. A limit below one
	// deletes nothing.
	Prune(ctx context.Context, cutoff time.Time, limit int) (Pruned, error)
}

// Pruned counts what one Prune deleted.
type Pruned struct {
	Events     int
	Deliveries int
}
