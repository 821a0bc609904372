package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

type profiles struct{ s *Store }

func (r profiles) Create(ctx context.Context, p profile.Profile) (int, error) {
	var n int
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		p.Proxy = nil
		if err := st.profiles.insert(undo, p); err != nil {
			return err
		}
		n = st.teamProfiles(p.TeamID)
		return nil
	})
	return n, err
}

func (r profiles) ByID(ctx context.Context, teamID, id string) (profile.Profile, error) {
	return readValue(ctx, r.s, func(st *state) (profile.Profile, error) {
		p, err := st.profiles.inTeam(teamID, id)
		if err != nil {
			return profile.Profile{}, err
		}
		return st.withProxy(p), nil
	})
}

// withProxy fills the view of p's proxy, as the SQL stores join it.
func (st *state) withProxy(p profile.Profile) profile.Profile {
	if p.ProxyID == "" {
		p.Proxy = nil
		return p
	}
	p.Proxy = &profile.ProxyRef{ID: p.ProxyID}
	if px, err := st.proxies.inTeam(p.TeamID, p.ProxyID); err == nil {
		p.Proxy.Type, p.Proxy.Host, p.Proxy.Port = string(px.Type), px.Host, px.Port
	}
	return p
}

// withProxies fills the proxy view of every profile of ps.
func (st *state) withProxies(ps []profile.Profile) []profile.Profile {
	for i := range ps {
		ps[i] = st.withProxy(ps[i])
	}
	return ps
}

func (r profiles) Count(ctx context.Context, teamID string) (int, error) {
	return readValue(ctx, r.s, func(st *state) (int, error) {
		return st.teamProfiles(teamID), nil
	})
}

// teamProfiles is how many profiles the team holds.
func (st *state) teamProfiles(teamID string) int {
	return len(st.profiles.query(func(p *profile.Profile) bool { return p.TeamID == teamID }, nil, unlimited))
}

func (r profiles) List(ctx context.Context, teamID string, f profilestore.Filter) ([]profile.Profile, error) {
	query := strings.ToLower(f.Query)
	return readValue(ctx, r.s, func(st *state) ([]profile.Profile, error) {
		page := st.withProxies(st.profiles.pageDown(teamID, f.BeforeID, f.Limit, func(p *profile.Profile) bool {
			return profileMatches(p, f, query)
		}))
		for i := range page {
			page[i].Fingerprint = page[i].Fingerprint.Summary()
		}
		return page, nil
	})
}

// profileMatches applies the filter's conditions; query is f.Query lowered.
// A status other than idle or running matches nothing.
func profileMatches(p *profile.Profile, f profilestore.Filter, query string) bool {
	if query != "" && !strings.Contains(strings.ToLower(p.Name), query) {
		return false
	}
	if f.Status != "" && p.Status() != f.Status {
		return false
	}
	if f.Tag != "" && !slices.Contains(p.Tags, f.Tag) {
		return false
	}
	return true
}

// Update keeps the stored session, creator and creation time: only the
// settings, data, cookies, version and UpdatedAt come from p.
func (r profiles) Update(ctx context.Context, p profile.Profile, expectVersion int) error {
	return r.update(ctx, p, expectVersion, false)
}

// UpdateIdle is Update that refuses a profile holding a session, once the
// version matched.
func (r profiles) UpdateIdle(ctx context.Context, p profile.Profile, expectVersion int) error {
	return r.update(ctx, p, expectVersion, true)
}

func (r profiles) update(ctx context.Context, p profile.Profile, expectVersion int, idle bool) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		next, err := st.profiles.inTeam(p.TeamID, p.ID)
		if err != nil {
			return err
		}
		if next.Version != expectVersion {
			return domain.PreconditionFailed("the profile was changed since it was read")
		}
		if idle && next.Session != nil {
			return profile.ErrRunning
		}
		next.Name, next.TemplateID, next.Browser = p.Name, p.TemplateID, p.Browser
		next.Fingerprint, next.ProxyID, next.Tags, next.Notes = p.Fingerprint, p.ProxyID, p.Tags, p.Notes
		next.Data, next.Cookies = p.Data, p.Cookies
		next.Version, next.UpdatedAt = p.Version, p.UpdatedAt
		st.profiles.put(undo, next)
		return nil
	})
}

func (r profiles) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.profiles.inTeam(teamID, id)
		if err != nil {
			return err
		}
		if err := cur.CheckDeletable(); err != nil {
			return err
		}
		st.profiles.remove(undo, id)
		return nil
	})
}

func (r profiles) SwapSession(ctx context.Context, teamID, id string, s profilestore.SessionSwap) (bool, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (bool, error) {
		cur, err := st.profiles.inTeam(teamID, id)
		if err != nil || !sessionMatches(cur.Session, s) {
			return false, err
		}
		cur.Session = s.Next
		st.profiles.put(undo, cur)
		return true, nil
	})
}

// sessionMatches is the condition of a swap, as SQL evaluates it: an idle
// profile has no expiry, so a swap with ExpiredBy never matches it.
func sessionMatches(cur *profile.Session, s profilestore.SessionSwap) bool {
	if cur == nil {
		return s.ExpectSessionID == "" && s.ExpiredBy == nil
	}
	if cur.ID != s.ExpectSessionID {
		return false
	}
	return s.ExpiredBy == nil || !cur.ExpiresAt.After(*s.ExpiredBy)
}

// BySession scans: the memory store holds few profiles.
func (r profiles) BySession(ctx context.Context, sessionID string) (profile.Profile, error) {
	return readValue(ctx, r.s, func(st *state) (profile.Profile, error) {
		found := st.profiles.query(func(p *profile.Profile) bool {
			return p.Session != nil && p.Session.ID == sessionID
		}, func(a, b *profile.Profile) int { return cmp.Compare(a.ID, b.ID) }, 1)
		if len(found) == 0 {
			return profile.Profile{}, domain.NotFound("session")
		}
		return st.withProxy(found[0]), nil
	})
}

// ListExpiredSessions breaks ties by id, so that the order never depends on
// map order.
func (r profiles) ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error) {
	return readValue(ctx, r.s, func(st *state) ([]profile.Profile, error) {
		return st.withProxies(st.profiles.query(func(p *profile.Profile) bool {
			return p.Session != nil && !p.Session.ExpiresAt.After(now)
		}, func(a, b *profile.Profile) int {
			return cmp.Or(a.Session.ExpiresAt.Compare(b.Session.ExpiresAt), cmp.Compare(a.ID, b.ID))
		}, limit)), nil
	})
}

// ListNodeSessions scans, as BySession does.
func (r profiles) ListNodeSessions(ctx context.Context, node string, limit int) ([]profile.Profile, error) {
	return readValue(ctx, r.s, func(st *state) ([]profile.Profile, error) {
		return st.withProxies(st.profiles.query(func(p *profile.Profile) bool {
			return node != "" && p.Session != nil && p.Session.Node == node
		}, st.profiles.lowestIDFirst, limit)), nil
	})
}

// CountSessions counts the sessions held that expire after now.
func (r profiles) CountSessions(ctx context.Context, now time.Time) (int, error) {
	return readValue(ctx, r.s, func(st *state) (int, error) {
		n := 0
		for _, p := range st.profiles.rows {
			if p.Session != nil && p.Session.ExpiresAt.After(now) {
				n++
			}
		}
		return n, nil
	})
}

// Profiles returns the profile repository.
func (s *Store) Profiles() profilestore.Profiles { return profiles{s: s} }
