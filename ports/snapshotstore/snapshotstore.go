// Package snapshotstore is the storage port of application/snapshots for
// the time machine: snapshots of profiles, and the bookkeeping that lets
// blobs (browser data, cookies) be shared by content and deleted only once
// nothing refers to them.
//
// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.
package snapshotstore

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/snapshot"
)

// Filter selects a page of a profile's snapshots, newest (highest id) first.
type Filter struct {
	// BeforeID keeps snapshots with an id lower than it: the cursor of the
	// previous page. "" starts at the newest.
	BeforeID string
	// Limit is the most snapshots returned (at least 1).
	Limit int
}

// Snapshots stores snapshots. Every call is scoped to one team and one
// profile: another team's or another profile's snapshot is not found.
type Snapshots interface {
	Create(ctx context.Context, s snapshot.Snapshot) error
	ByID(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error)
	List(ctx context.Context, teamID, profileID string, f Filter) ([]snapshot.Snapshot, error)
	// Delete removes one snapshot and returns it.
	Delete(ctx context.Context, teamID, profileID, id string) (snapshot.Snapshot, error)
	// Prune removes all but the newest keep snapshots of the profile and
	// returns the removed ones.
	Prune(ctx context.Context, teamID, profileID string, keep int) ([]snapshot.Snapshot, error)
	// DeleteAll removes every snapshot of the profile and returns them.
	DeleteAll(ctx context.Context, teamID, profileID string) ([]snapshot.Snapshot, error)
}

// BlobRefs decides when a blob may go. A blob is referred to by the
// profiles (their data and cookies) and the snapshots that name its sha256.
// Whoever drops a reference records the blob as a candidate (Release); a
// collector later deletes the candidates nothing refers to any more, and
// never while an upload is in progress, since an upload may be about to
// refer to any blob (content is shared, and storing content that exists is
// cheap and does not copy it).
type BlobRefs interface {
	// BeginUpload registers an upload in progress until it ends or
	// expiresAt passes (a process that died mid-upload).
	BeginUpload(ctx context.Context, id string, expiresAt time.Time) error
	// EndUpload ends a registered upload; ending an unknown one is not an
	// error.
	EndUpload(ctx context.Context, id string) error
	// Release records that the blobs may have lost their last reference at
	// at. Recording a candidate twice keeps the later time.
	Release(ctx context.Context, at time.Time, sha256s ...string) error
	// UploadsInProgress reports whether an upload registered and not ended
	// has not yet expired at now. Called in a unit of work, it also keeps
	// new uploads from registering until the unit ends, so that a collector
	// that saw none deletes nothing an upload could refer to.
	UploadsInProgress(ctx context.Context, now time.Time) (bool, error)
	// Garbage returns up to limit candidates released at or before
	// releasedBy that no profile and no snapshot of any team refers to.
	// Candidates that are referred to again are forgotten on the way.
	Garbage(ctx context.Context, releasedBy time.Time, limit int) ([]string, error)
	// Forget removes the candidates (after their blobs are deleted).
	Forget(ctx context.Context, sha256s ...string) error
}
