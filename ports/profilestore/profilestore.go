// Package profilestore is the storage port of application/profiles: profiles
// with their settings and the session lease each carries.
//
// Missing rows are reported as domain not-found errors, unique-key clashes as
// domain conflict errors; anything else is an internal error.
package profilestore

import (
	"context"
	"time"

	"github.com/profilesvc/profilesvc/domain/profile"
)

// Filter selects a page of a team's profiles, newest (highest id)
// first.
type Filter struct {
	// Query keeps profiles whose name contains it, ignoring case; "" keeps all.
	Query string
	// Status keeps idle or running profiles; "" keeps both.
	Status profile.Status
	// Tag keeps profiles carrying exactly this tag; "" keeps all.
	Tag string
	// BeforeID keeps profiles with an id lower than it: the cursor of the
	// previous page. "" starts at the newest.
	BeforeID string
	// Limit is the most profiles returned (at least 1).
	Limit int
}

// SessionSwap is a compare-and-set on a profile's session: it applies only
// when the profile's current session matches.
type SessionSwap struct {
	// ExpectSessionID is the id of the session the profile must hold now,
	// or "" when it must hold none.
	ExpectSessionID string
	// ExpiredBy, when set, also requires the current session's ExpiresAt to
	// be at or before it (a reaper must not end a session a heartbeat has
	// just extended).
	ExpiredBy *time.Time
	// Next is the session the profile holds afterwards; nil ends it.
	Next *profile.Session
}

// Profiles stores profiles, each with its session lease. Every
// call but BySession, ListExpiredSessions, ListNodeSessions and
// CountSessions is scoped to one team: another team's profile is not
// found.
type Profiles interface {
	// Create stores p with its tags and counts it in its team, and returns
	// how many profiles the team holds with p. The count is its last
	// statement and takes the team's lock (as teamstore.Teams.Lock) until
	// the unit ends, so it includes every create that held the lock
	// before, committed; make it the unit's last write, so that the team's
	// creates wait for one another as briefly as they can. The team's
	// quota is the caller's.
	Create(ctx context.Context, p profile.Profile) (int, error)
	// ByID, List, BySession, ListExpiredSessions and ListNodeSessions
	// return profiles with their tags and their proxy's view (Proxy; by
	// its id alone when the team has no such proxy), read together.
	ByID(ctx context.Context, teamID, id string) (profile.Profile, error)
	// Count returns how many profiles the team has.
	Count(ctx context.Context, teamID string) (int, error)
	// List returns the team's profiles as a list shows them: each
	// fingerprint is its Summary, the device is not read.
	List(ctx context.Context, teamID string, f Filter) ([]profile.Profile, error)
	// Update replaces p's settings, data and cookies (not its session) if
	// the stored version is expectVersion; a different version is a
	// precondition-failed error.
	Update(ctx context.Context, p profile.Profile, expectVersion int) error
	// UpdateIdle is Update that also requires the profile to hold no
	// session: a running profile is profile.ErrRunning (checked after the
	// version), so that data never change under a running browser.
	UpdateIdle(ctx context.Context, p profile.Profile, expectVersion int) error
	// Delete removes an idle profile; a running one is a conflict.
	Delete(ctx context.Context, teamID, id string) error
	// SwapSession applies s atomically and reports whether it matched: of
	// concurrent swaps expecting the same session exactly one applies, in
	// every instance of the service sharing the database.
	SwapSession(ctx context.Context, teamID, id string, s SessionSwap) (bool, error)
	// BySession returns the profile, of any team, that holds the session
	// sessionID now; none holds it: not found. It serves the CDP relay,
	// whose URL names only the session and whose token is then checked
	// against the session's.
	BySession(ctx context.Context, sessionID string) (profile.Profile, error)
	// ListExpiredSessions returns up to limit profiles of any team whose
	// session expired at or before now, earliest expiry first.
	ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error)
	// ListNodeSessions returns up to limit profiles of any team whose
	// session runs on node (Session.Node, an instance's NODE_URL), by id:
	// an instance that restarts after a crash ends the sessions it ran.
	// node "" matches nothing.
	ListNodeSessions(ctx context.Context, node string, limit int) ([]profile.Profile, error)
	// CountSessions returns how many profiles, of every team, hold a
	// session that has not expired by now: the sessions running on the
	// whole service.
	CountSessions(ctx context.Context, now time.Time) (int, error)
}
