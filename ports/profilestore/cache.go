package profilestore

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// Cache keeps profiles between reads, by team and id, for every instance
// that shares it. A reader that misses gets a lease, and its Fill stores
// only while that lease is still in place: a Drop in between (a writer that
// committed after the reader's database read may have begun) refuses the
// Fill, so an old row never lands in the cache after the write's Drop.
//
// The cache never fails a read: when its backend does not answer, Get
// misses without a lease and Fill does nothing.
type Cache interface {
	// Get returns the cached profile (hit), or on a miss the lease a Fill
	// needs; lease is "" when another reader holds it or the backend does
	// not answer, and then the reader must not fill.
	Get(ctx context.Context, teamID, id string) (p profile.Profile, hit bool, lease string)
	// Fill stores p, read after Get handed out lease, unless the entry was
	// dropped since.
	Fill(ctx context.Context, teamID, id, lease string, p profile.Profile)
	// Drop removes the entry and any lease. It returns an error only when
	// the entry may still be read.
	Drop(ctx context.Context, teamID, id string) error
}
