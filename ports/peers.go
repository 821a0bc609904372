package ports

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/team"
)

// PlacedLaunch is a launch that the instance which received it hands to
// another instance of the fleet, one with room for the browser. The actor's
// role was checked where the launch was received and is checked again
// where it runs.
type PlacedLaunch struct {
	Actor     team.Actor
	ProfileID string
	Headless  bool
	// TTLSeconds is the lease length asked for; nil means the default.
	TTLSeconds *int
}

// PlacedSession is the session a placed launch started: its id, and the
// relay token, which only this answer carries.
type PlacedSession struct {
	SessionID string
	Token     string
}

// PlacedRelease is a release that the instance which received it hands to
// the instance that runs the session's browser, which closes it and
// stores its data.
type PlacedRelease struct {
	Actor     team.Actor
	ProfileID string
	SessionID string
}

// Peers are the other instances of the fleet, as one instance asks them to
// act on the browsers they run.
type Peers interface {
	// LaunchOn asks the instance at node (its NODE_URL) to take the lease
	// and start the browser itself.
	LaunchOn(ctx context.Context, node string, l PlacedLaunch) (PlacedSession, error)
	// ReleaseOn asks the instance at node to release a session whose
	// browser it runs; it answers once the data are stored.
	ReleaseOn(ctx context.Context, node string, r PlacedRelease) error
	// What an instance refuses comes back as the domain error it gave; an
	// instance that cannot be reached, or that has no room for a launch,
	// is a domain Unavailable error.
}
