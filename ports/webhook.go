package ports

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/webhook"
)

// WebhookEndpointRepository stores a team's webhook endpoints.
type WebhookEndpointRepository interface {
	Create(ctx context.Context, e webhook.Endpoint) error
	// ByID returns an endpoint of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error)
	// List returns up to limit endpoints of the team with an id lower than
	// beforeID ("" for the first page), newest first.
	List(ctx context.Context, teamID, beforeID string, limit int) ([]webhook.Endpoint, error)
	// ListEnabled returns every enabled endpoint of the team, for fan-out.
	ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error)
	// Update replaces url, events, sealed secret, enabled and updated time.
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
	// PerEndpoint bounds the deliveries of one endpoint in one claim.
	PerEndpoint int
	// ExcludeEndpoints are endpoints the owner has enough in flight for.
	ExcludeEndpoints []string
}

// DeliveryRepository stores deliveries and leases them to dispatchers.
type DeliveryRepository interface {
	Create(ctx context.Context, d webhook.Delivery) error
	// ByID returns a delivery of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (webhook.Delivery, error)
	List(ctx context.Context, teamID, endpointID string, f DeliveryFilter) ([]webhook.Delivery, error)
	// Claim leases up to c.Limit pending, due deliveries whose lease is
	// free or lapsed, earliest due first. Concurrent claims, from any
	// instance, never return the same delivery while its lease holds
	// (PostgreSQL: FOR UPDATE SKIP LOCKED).
	Claim(ctx context.Context, c DeliveryClaim) ([]webhook.Delivery, error)
	// Complete stores d's status, attempts, round start, next attempt and
	// updated time and frees the lease, if owner still holds it; false
	// when the lease lapsed and another dispatcher took the delivery.
	Complete(ctx context.Context, d webhook.Delivery, owner string) (bool, error)
	// Requeue stores a retried delivery (status, round start, next attempt,
	// updated time) if it is still failed; false otherwise.
	Requeue(ctx context.Context, d webhook.Delivery) (bool, error)
	// Pending reports the earliest NextAttemptAt and the earliest CreatedAt
	// of pending deliveries across teams; ok is false when none is pending.
	Pending(ctx context.Context) (nextDue, oldestCreated time.Time, ok bool, err error)
}

// WebhookRequest is one delivery attempt's HTTP request.
type WebhookRequest struct {
	URL     string
	Body    []byte
	Headers map[string]string
}

// WebhookResponse is what the receiver answered.
type WebhookResponse struct {
	StatusCode int
	Latency    time.Duration
}

// WebhookSender sends deliveries to customers' servers.
type WebhookSender interface {
	// Send POSTs the request once. Redirects are not followed (their
	// status is returned); no answer within the sender's time-out, a
	// connection error or a refused address is an error.
	Send(ctx context.Context, r WebhookRequest) (WebhookResponse, error)
	// CheckTarget resolves the URL's host and refuses it when the sender
	// would not connect there (loopback, private, link-local, metadata
	// addresses), unless private targets are allowed.
	CheckTarget(ctx context.Context, rawURL string) error
}

// SecretBox encrypts secrets kept at rest (webhook secrets) with the
// service's key.
type SecretBox interface {
	Seal(plaintext []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// WebhookMetrics records the delivery pipeline's figures.
type WebhookMetrics interface {
	// Attempt counts one attempt by outcome ("succeeded", "retry",
	// "failed") and records its latency.
	Attempt(outcome string, latency time.Duration)
	// OldestPending sets the age of the oldest pending delivery (0: none).
	OldestPending(age time.Duration)
}
