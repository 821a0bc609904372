// Package storage names what a storage adapter offers as a whole: the
// repositories of every module, the unit of work that spans them, and a
// readiness check. Only the composition root, the adapters and the
// conformance suites see it; a use case depends on the few repositories it
// uses (declared by its module's store package) and on ports.UnitOfWork.
package storage

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/accountstore"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/ports/proxystore"
	"github.com/profilesvc/profilesvc/ports/snapshotstore"
	"github.com/profilesvc/profilesvc/ports/teamstore"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.

// Outbox is the whole outbox table: what the webhook pipeline appends for
// every module, and a plain read for tests and operators.
type Outbox interface {
	ports.Outbox
	// ListAfter returns up to limit events with an id greater than afterID
	// ("" for the first), in id order.
	ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error)
}

// Store is a storage adapter. Each accessor returns a repository whose calls
// join the unit of work carried by their context, if any.
type Store interface {
	ports.UnitOfWork

	Users() accountstore.Users
	APIKeys() accountstore.APIKeys
	RefreshTokens() accountstore.RefreshTokens
	ResetTokens() accountstore.ResetTokens

	Teams() teamstore.Teams
	Memberships() teamstore.Memberships
	Invitations() teamstore.Invitations

	Profiles() profilestore.Profiles
	// Instances is the fleet's registry, shared by every instance on the store.
	Instances() profilestore.Instances

	Proxies() proxystore.Proxies

	Snapshots() snapshotstore.Snapshots
	BlobRefs() snapshotstore.BlobRefs

	WebhookEndpoints() webhookstore.Endpoints
	Deliveries() webhookstore.Deliveries

	Outbox() Outbox

	IdempotencyRecords() ports.IdempotencyRecords

	// Ping reports whether the storage answers.
	Ping(ctx context.Context) error
}
