package memory

import (
	"context"
	"slices"

	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/ports/proxystore"
)

type proxies struct{ s *Store }

func (r proxies) Create(ctx context.Context, p proxy.Proxy) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.proxies.insert(undo, p) })
}

func (r proxies) ByID(ctx context.Context, teamID, id string) (proxy.Proxy, error) {
	return readValue(ctx, r.s, func(st *state) (proxy.Proxy, error) { return st.proxies.inTeam(teamID, id) })
}

func (r proxies) List(ctx context.Context, teamID string, f proxystore.Filter) ([]proxy.Proxy, error) {
	return readValue(ctx, r.s, func(st *state) ([]proxy.Proxy, error) {
		return st.proxies.pageDown(teamID, f.BeforeID, f.Limit, func(p *proxy.Proxy) bool {
			return f.Status == "" || p.Status == f.Status
		}), nil
	})
}

func (r proxies) Count(ctx context.Context, teamID string) (int, error) {
	return readValue(ctx, r.s, func(st *state) (int, error) {
		return len(st.proxies.query(func(p *proxy.Proxy) bool { return p.TeamID == teamID }, nil, unlimited)), nil
	})
}

// Update keeps the stored creation time.
func (r proxies) Update(ctx context.Context, p proxy.Proxy) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.proxies.inTeam(p.TeamID, p.ID)
		if err != nil {
			return err
		}
		p.CreatedAt = cur.CreatedAt
		st.proxies.put(undo, p)
		return nil
	})
}

func (r proxies) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, err := st.proxies.inTeam(teamID, id); err != nil {
			return err
		}
		if st.profiles.exists(func(p *profile.Profile) bool { return p.TeamID == teamID && p.ProxyID == id }) {
			return proxy.ErrInUse
		}
		st.proxies.remove(undo, id)
		return nil
	})
}

func cloneProxy(p proxy.Proxy) proxy.Proxy {
	p.PasswordSealed = slices.Clone(p.PasswordSealed)
	if p.LastCheck != nil {
		c := *p.LastCheck
		c.CheckedAt = c.CheckedAt.UTC()
		p.LastCheck = &c
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	return p
}

// Proxies returns the proxy repository.
func (s *Store) Proxies() proxystore.Proxies { return proxies{s: s} }
