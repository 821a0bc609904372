package profilestore

import (
	"context"
	"time"
)

// Instance is one instance of the service as the fleet's registry knows it:
// where the other instances reach it, and how many browsers it may run and
// runs.
type Instance struct {
	// Node is the instance's NODE_URL: its key in the registry, and what a
	// session names as where its browser runs (profile.Session.Node).
	Node string
	// ID names the process that last beat for the node ("ins_..."): a
	// new process of the node has a new one.
	ID       string
	Capacity int
	Running  int
	// Draining is an instance that takes no more browsers.
	Draining bool
	// Version is the service's build; Engine the version of the browser
	// engine it runs ("" for a runtime that runs none).
	Version, Engine string
	StartedAt       time.Time
	SeenAt          time.Time
	// GoneAt is when the fleet found the instance gone (it had not beaten
	// for longer than the fleet waits); nil while it beats.
	GoneAt *time.Time
}

// Instances is the fleet's registry: every instance sharing the database
// beats into it, and finds there where to place a launch it has no room
// for. Its calls are not scoped to a team: it holds no team's data.
type Instances interface {
	// Beat records inst by its Node, as seen at inst.SeenAt and not gone,
	// and returns the row it replaced (nil if there was none).
	Beat(ctx context.Context, inst Instance) (*Instance, error)
	// List returns every instance of the registry, gone ones included,
	// by Node.
	List(ctx context.Context) ([]Instance, error)
	// MarkGone sets GoneAt to at on node's row if it is not gone and was
	// last seen at or before seenBy, and reports whether it did: of
	// concurrent calls, one does; a beat since seenBy keeps the row live.
	MarkGone(ctx context.Context, node string, seenBy, at time.Time) (bool, error)
	// Remove deletes node's row if it is gone and was last seen at or
	// before seenBy (it has not beaten again), and reports whether it did.
	Remove(ctx context.Context, node string, seenBy time.Time) (bool, error)
}
