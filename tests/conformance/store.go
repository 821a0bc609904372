package conformance

import (
	"context"
	"testing"

	"github.com/profilesvc/profilesvc/ports/storage"
)

// NewStore returns a fresh, empty, migrated store for one subtest, and
// arranges (with t.Cleanup) to close it. Ids are unique across the test
// binary, but the outbox checks list every event, so a store must not hold
// events from an earlier subtest.
type NewStore func(t *testing.T) storage.Store

// RunStore checks that a storage.Store honours the contracts of the storage
// ports (ports/*store, ports.UnitOfWork, ports.Outbox,
// ports.IdempotencyRecords):
// every repository method, the not-found and conflict kinds, single-use
// consumption of tokens and invitations, membership and profile paging,
// profile filters, a team lock that serialises units counting the team's
// owners, session swaps with one winner among concurrent callers, outbox
// ordering, outbox events claimed by one of concurrent units until marked
// dispatched, proxies with their last check and the refusal to delete one a
// profile uses, snapshots scoped to their team and profile, blob candidates
// that nothing of any team refers to, uploads that keep a collecting unit's
// blobs safe, webhook endpoints and their deliveries, delivery leases that
// concurrent claims never share, a unit of work that commits all of its
// writes or none of them, even under concurrency, idempotency records
// claimed in the unit of their request's effect, and the fleet's registry of
// instances, whose beats, gone marks and removals each apply once among
// concurrent callers.
//
// Every field of an entity read back is compared with what was written,
// unexported ones included. Times: the suite writes times with nanoseconds,
// some in a non-UTC zone, and requires that they come back in UTC and within
// a millisecond of what was written (storeTimePrecision). Byte slices (hashes,
// outbox data, delivery payloads) must come back byte for byte. A nil slice
// or map and an empty one are equal.
//
// Subtests run one after another, so a factory may hand out schemas or files
// of one shared database server.
func RunStore(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("ping", func(t *testing.T) {
		f := newStoreFixture(t, newStore)
		if err := f.s.Ping(f.ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	t.Run("users", func(t *testing.T) { runUserRepository(t, newStore) })
	t.Run("teams", func(t *testing.T) { runTeamRepository(t, newStore) })
	t.Run("memberships", func(t *testing.T) { runMembershipRepository(t, newStore) })
	t.Run("team memberships", func(t *testing.T) { runTeamMemberships(t, newStore) })
	t.Run("team lock", func(t *testing.T) { runTeamLock(t, newStore) })
	t.Run("invitations", func(t *testing.T) { runInvitationRepository(t, newStore) })
	t.Run("api keys", func(t *testing.T) { runAPIKeyRepository(t, newStore) })
	t.Run("refresh tokens", func(t *testing.T) { runRefreshTokenRepository(t, newStore) })
	t.Run("reset tokens", func(t *testing.T) { runResetTokenRepository(t, newStore) })
	t.Run("profiles", func(t *testing.T) { runProfileRepository(t, newStore) })
	t.Run("profile node sessions", func(t *testing.T) { runProfileNodeSessions(t, newStore) })
	t.Run("instances", func(t *testing.T) { runInstances(t, newStore) })
	t.Run("outbox", func(t *testing.T) { runOutbox(t, newStore) })
	t.Run("proxies", func(t *testing.T) { runProxyRepository(t, newStore) })
	t.Run("snapshots", func(t *testing.T) { runSnapshotRepository(t, newStore) })
	t.Run("blob refs", func(t *testing.T) { runBlobRefs(t, newStore) })
	t.Run("webhook endpoints", func(t *testing.T) { runWebhookEndpoints(t, newStore) })
	t.Run("deliveries", func(t *testing.T) { runDeliveries(t, newStore) })
	t.Run("webhook retention", func(t *testing.T) { runWebhookRetention(t, newStore) })
	t.Run("unit of work", func(t *testing.T) { runUnitOfWork(t, newStore) })
	t.Run("idempotency records", func(t *testing.T) { runIdempotencyRecords(t, newStore) })
}

// inUnit runs fn in a unit of work of s. fn gets the store itself: its
// repositories, called with fn's context, join the unit.
func inUnit(ctx context.Context, s storage.Store, fn func(ctx context.Context, tx storage.Store) error) error {
	return s.Do(ctx, func(ctx context.Context) error { return fn(ctx, s) })
}
