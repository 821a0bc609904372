// Package proxystore is the storage port of application/proxies: a team's
// proxies with the result of their last check.
//
// Missing rows are reported as domain not-found errors, unique-key clashes
// and a proxy still in use as domain conflict errors; anything else is an
// internal error.
package proxystore

import (
	"context"

	"github.com/profilesvc/profilesvc/domain/proxy"
)

// Filter selects a page of a team's proxies, newest first.
type Filter struct {
	// Status keeps proxies in that state; "" keeps all.
	Status proxy.Status
	// BeforeID keeps proxies with an id lower than it ("" from the newest).
	BeforeID string
	Limit    int
}

// Proxies stores a team's proxies.
type Proxies interface {
	Create(ctx context.Context, p proxy.Proxy) error
	// ByID returns a proxy of the team; another team's is not found.
	ByID(ctx context.Context, teamID, id string) (proxy.Proxy, error)
	List(ctx context.Context, teamID string, f Filter) ([]proxy.Proxy, error)
	// Count returns how many proxies the team has.
	Count(ctx context.Context, teamID string) (int, error)
	// Update replaces everything but the id, team and creation time.
	Update(ctx context.Context, p proxy.Proxy) error
	// Delete removes the proxy; a conflict while a profile of the team
	// uses it.
	Delete(ctx context.Context, teamID, id string) error
}
