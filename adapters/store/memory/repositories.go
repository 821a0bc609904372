package memory

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// Each repository is bound to a unit of work when tx is set, and makes each
// call on its own otherwise.

type users struct{ s *Store }

func (r users) Create(ctx context.Context, u account.User) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		email := account.NormalizeEmail(u.Email)
		if _, taken := st.userByEmail[email]; taken {
			return domain.Conflict("a user with this email already exists")
		}
		if _, taken := st.users[u.ID]; taken {
			return domain.Conflict("a user with this id already exists")
		}
		put(undo, st.users, u.ID, cloneUser(u))
		put(undo, st.userByEmail, email, u.ID)
		return nil
	})
}

func (r users) ByID(ctx context.Context, id string) (account.User, error) {
	var u account.User
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.users[id]
		if !ok {
			return domain.NotFound("user")
		}
		u = cloneUser(found)
		return nil
	})
	return u, err
}

func (r users) ByEmail(ctx context.Context, email string) (account.User, error) {
	var u account.User
	err := r.s.read(ctx, func(st *state) error {
		id, ok := st.userByEmail[account.NormalizeEmail(email)]
		if !ok {
			return domain.NotFound("user")
		}
		u = cloneUser(st.users[id])
		return nil
	})
	return u, err
}

func (r users) UpdatePassword(ctx context.Context, id, passwordHash string, at time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		u, ok := st.users[id]
		if !ok {
			return domain.NotFound("user")
		}
		u.PasswordHash, u.UpdatedAt = passwordHash, at.UTC()
		put(undo, st.users, id, u)
		return nil
	})
}

// ListByIDs skips unknown ids and returns a user named twice once.
func (r users) ListByIDs(ctx context.Context, ids []string) ([]account.User, error) {
	var out []account.User
	err := r.s.read(ctx, func(st *state) error {
		out = make([]account.User, 0, len(ids))
		seen := make(map[string]bool, len(ids))
		for _, id := range ids {
			u, ok := st.users[id]
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			out = append(out, cloneUser(u))
		}
		return nil
	})
	return out, err
}

type teams struct{ s *Store }

func (r teams) Create(ctx context.Context, t team.Team) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.teams[t.ID]; taken {
			return domain.Conflict("a team with this id already exists")
		}
		put(undo, st.teams, t.ID, cloneTeam(t))
		return nil
	})
}

func (r teams) ByID(ctx context.Context, id string) (team.Team, error) {
	var t team.Team
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.teams[id]
		if !ok {
			return domain.NotFound("team")
		}
		t = cloneTeam(found)
		return nil
	})
	return t, err
}

// Lock only checks that the team exists: the unit of work already holds the
// store's write lock, so no other unit runs until it ends.
func (r teams) Lock(ctx context.Context, id string) error {
	return r.s.read(ctx, func(st *state) error {
		if _, ok := st.teams[id]; !ok {
			return domain.NotFound("team")
		}
		return nil
	})
}

type memberships struct{ s *Store }

// Create indexes a membership by user only when it has a user id: members
// invited by an email without an account share the empty one.
func (r memberships) Create(ctx context.Context, m team.Member) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		key := memberKey{m.TeamID, m.UserID}
		if _, taken := st.memberOf[key]; taken && m.UserID != "" {
			return domain.Conflict("the user is already a member of this team")
		}
		emailKey := memberEmailKey{m.TeamID, account.NormalizeEmail(m.Email)}
		if _, taken := st.memberByEmail[emailKey]; taken {
			return domain.Conflict("the email is already a member of this team")
		}
		if _, taken := st.members[m.ID]; taken {
			return domain.Conflict("a membership with this id already exists")
		}
		put(undo, st.members, m.ID, cloneMember(m))
		if m.UserID != "" {
			put(undo, st.memberOf, key, m.ID)
		}
		put(undo, st.memberByEmail, emailKey, m.ID)
		st.addMemberID(undo, m.TeamID, m.ID)
		return nil
	})
}

// ByUser finds no membership for the empty user id: that is the user id of
// every member still waiting for an account, not a user.
func (r memberships) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	var m team.Member
	err := r.s.read(ctx, func(st *state) error {
		id, ok := st.memberOf[memberKey{teamID, userID}]
		if !ok {
			return domain.NotFound("membership")
		}
		m = cloneMember(st.members[id])
		return nil
	})
	return m, err
}

// ListByUser lists nothing for the empty user id, as ByUser finds nothing.
func (r memberships) ListByUser(ctx context.Context, userID string) ([]team.Member, error) {
	var out []team.Member
	err := r.s.read(ctx, func(st *state) error {
		out = []team.Member{}
		if userID == "" {
			return nil
		}
		for _, m := range st.members {
			if m.UserID == userID {
				out = append(out, cloneMember(m))
			}
		}
		// The id breaks ties so that the order never depends on map order.
		slices.SortFunc(out, func(a, b team.Member) int {
			return cmp.Or(a.InvitedAt.Compare(b.InvitedAt), cmp.Compare(a.ID, b.ID))
		})
		return nil
	})
	return out, err
}

// memberOfTeam finds the team's membership: another team's is not found.
func (st *state) memberOfTeam(teamID, id string) (team.Member, error) {
	m, ok := st.members[id]
	if !ok || m.TeamID != teamID {
		return team.Member{}, domain.NotFound("membership")
	}
	return m, nil
}

func (r memberships) ByID(ctx context.Context, teamID, id string) (team.Member, error) {
	var m team.Member
	err := r.s.read(ctx, func(st *state) error {
		found, err := st.memberOfTeam(teamID, id)
		if err != nil {
			return err
		}
		m = cloneMember(found)
		return nil
	})
	return m, err
}

func (r memberships) ByEmail(ctx context.Context, teamID, email string) (team.Member, error) {
	var m team.Member
	err := r.s.read(ctx, func(st *state) error {
		id, ok := st.memberByEmail[memberEmailKey{teamID, account.NormalizeEmail(email)}]
		if !ok {
			return domain.NotFound("membership")
		}
		m = cloneMember(st.members[id])
		return nil
	})
	return m, err
}

// List pages through the team's sorted ids, as profiles.List does.
func (r memberships) List(ctx context.Context, teamID, beforeID string, limit int) ([]team.Member, error) {
	var out []team.Member
	err := r.s.read(ctx, func(st *state) error {
		out = pageDown(st.membersOf[teamID], beforeID, limit, func(id string) (team.Member, bool) {
			return cloneMember(st.members[id]), true
		})
		return nil
	})
	return out, err
}

// Update keeps the stored email and invitation time: only the user id, role,
// status and JoinedAt come from m.
func (r memberships) Update(ctx context.Context, m team.Member) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.memberOfTeam(m.TeamID, m.ID)
		if err != nil {
			return err
		}
		key := memberKey{m.TeamID, m.UserID}
		if holder, taken := st.memberOf[key]; taken && m.UserID != "" && holder != m.ID {
			return domain.Conflict("the user is already a member of this team")
		}
		if cur.UserID != m.UserID {
			if cur.UserID != "" {
				remove(undo, st.memberOf, memberKey{cur.TeamID, cur.UserID})
			}
			if m.UserID != "" {
				put(undo, st.memberOf, key, m.ID)
			}
		}
		next := cur
		next.UserID, next.Role, next.Status, next.JoinedAt = m.UserID, m.Role, m.Status, m.JoinedAt
		put(undo, st.members, m.ID, cloneMember(next))
		return nil
	})
}

func (r memberships) Count(ctx context.Context, teamID string) (active, owners int, err error) {
	err = r.s.read(ctx, func(st *state) error {
		for _, id := range st.membersOf[teamID] {
			m := st.members[id]
			if m.Status != team.StatusActive {
				continue
			}
			active++
			if m.Role == team.RoleOwner {
				owners++
			}
		}
		return nil
	})
	if err != nil {
		return 0, 0, err
	}
	return active, owners, nil
}

type invitations struct{ s *Store }

func (r invitations) Create(ctx context.Context, inv team.Invitation) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.invitations[inv.ID]; taken {
			return domain.Conflict("an invitation with this id already exists")
		}
		put(undo, st.invitations, inv.ID, cloneInvitation(inv))
		return nil
	})
}

func (r invitations) ByID(ctx context.Context, id string) (team.Invitation, error) {
	var inv team.Invitation
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.invitations[id]
		if !ok {
			return domain.NotFound("invitation")
		}
		inv = cloneInvitation(found)
		return nil
	})
	return inv, err
}

// Consume: see refreshTokens.Consume.
func (r invitations) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	consumed := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		inv, ok := st.invitations[id]
		if !ok {
			return domain.NotFound("invitation")
		}
		if inv.UsedAt != nil {
			return nil
		}
		inv.UsedAt = utcPtr(&at)
		put(undo, st.invitations, id, inv)
		consumed = true
		return nil
	})
	return consumed, err
}

type apiKeys struct{ s *Store }

func (r apiKeys) Create(ctx context.Context, k account.APIKey) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.apiKeys[k.ID]; taken {
			return domain.Conflict("an API key with this id already exists")
		}
		put(undo, st.apiKeys, k.ID, cloneAPIKey(k))
		return nil
	})
}

func (r apiKeys) ByID(ctx context.Context, id string) (account.APIKey, error) {
	var k account.APIKey
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.apiKeys[id]
		if !ok {
			return domain.NotFound("API key")
		}
		k = cloneAPIKey(found)
		return nil
	})
	return k, err
}

func (r apiKeys) ListByUser(ctx context.Context, teamID, userID string) ([]account.APIKey, error) {
	var out []account.APIKey
	err := r.s.read(ctx, func(st *state) error {
		out = []account.APIKey{}
		for _, k := range st.apiKeys {
			if k.TeamID == teamID && k.UserID == userID {
				out = append(out, cloneAPIKey(k))
			}
		}
		slices.SortFunc(out, func(a, b account.APIKey) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
		})
		return nil
	})
	return out, err
}

func (r apiKeys) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		k, ok := st.apiKeys[id]
		if !ok || k.TeamID != teamID {
			return domain.NotFound("API key")
		}
		remove(undo, st.apiKeys, id)
		return nil
	})
}

type refreshTokens struct{ s *Store }

func (r refreshTokens) Create(ctx context.Context, t account.RefreshToken) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.refresh[t.ID]; taken {
			return domain.Conflict("a refresh token with this id already exists")
		}
		put(undo, st.refresh, t.ID, cloneRefreshToken(t))
		return nil
	})
}

func (r refreshTokens) ByID(ctx context.Context, id string) (account.RefreshToken, error) {
	var t account.RefreshToken
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.refresh[id]
		if !ok {
			return domain.NotFound("refresh token")
		}
		t = cloneRefreshToken(found)
		return nil
	})
	return t, err
}

// Consume reports an unknown id as not found, as the SQL stores do, so a
// caller can tell a token that never existed from one already spent.
func (r refreshTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	consumed := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		t, ok := st.refresh[id]
		if !ok {
			return domain.NotFound("refresh token")
		}
		if t.UsedAt != nil || t.RevokedAt != nil {
			return nil
		}
		t.UsedAt = utcPtr(&at)
		put(undo, st.refresh, id, t)
		consumed = true
		return nil
	})
	return consumed, err
}

func (r refreshTokens) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	return r.revokeWhere(ctx, at, func(t account.RefreshToken) bool { return t.FamilyID == familyID })
}

func (r refreshTokens) RevokeUser(ctx context.Context, userID string, at time.Time) error {
	return r.revokeWhere(ctx, at, func(t account.RefreshToken) bool { return t.UserID == userID })
}

// revokeWhere keeps the first revocation time of a token already revoked, so
// that the time a family was first compromised is not overwritten.
func (r refreshTokens) revokeWhere(ctx context.Context, at time.Time, match func(account.RefreshToken) bool) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for id, t := range st.refresh {
			if t.RevokedAt == nil && match(t) {
				t.RevokedAt = utcPtr(&at)
				put(undo, st.refresh, id, t)
			}
		}
		return nil
	})
}

type resetTokens struct{ s *Store }

func (r resetTokens) Create(ctx context.Context, t account.ResetToken) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.resets[t.ID]; taken {
			return domain.Conflict("a reset token with this id already exists")
		}
		put(undo, st.resets, t.ID, cloneResetToken(t))
		return nil
	})
}

func (r resetTokens) ByID(ctx context.Context, id string) (account.ResetToken, error) {
	var t account.ResetToken
	err := r.s.read(ctx, func(st *state) error {
		found, ok := st.resets[id]
		if !ok {
			return domain.NotFound("reset token")
		}
		t = cloneResetToken(found)
		return nil
	})
	return t, err
}

// Consume: see refreshTokens.Consume.
func (r resetTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	consumed := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		t, ok := st.resets[id]
		if !ok {
			return domain.NotFound("reset token")
		}
		if t.UsedAt != nil {
			return nil
		}
		t.UsedAt = utcPtr(&at)
		put(undo, st.resets, id, t)
		consumed = true
		return nil
	})
	return consumed, err
}

type profiles struct{ s *Store }

func (r profiles) Create(ctx context.Context, p profile.Profile) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, taken := st.profiles[p.ID]; taken {
			return domain.Conflict("a profile with this id already exists")
		}
		put(undo, st.profiles, p.ID, cloneProfile(p))
		st.addProfileID(undo, p.TeamID, p.ID)
		return nil
	})
}

// profileOf finds the team's profile: another team's is not found.
func (st *state) profileOf(teamID, id string) (profile.Profile, error) {
	p, ok := st.profiles[id]
	if !ok || p.TeamID != teamID {
		return profile.Profile{}, domain.NotFound("profile")
	}
	return p, nil
}

func (r profiles) ByID(ctx context.Context, teamID, id string) (profile.Profile, error) {
	var p profile.Profile
	err := r.s.read(ctx, func(st *state) error {
		found, err := st.profileOf(teamID, id)
		if err != nil {
			return err
		}
		p = cloneProfile(found)
		return nil
	})
	return p, err
}

// List pages through the team's sorted ids, keeping the profiles the filter
// matches.
func (r profiles) List(ctx context.Context, teamID string, f profilestore.Filter) ([]profile.Profile, error) {
	var out []profile.Profile
	err := r.s.read(ctx, func(st *state) error {
		query := strings.ToLower(f.Query)
		out = pageDown(st.profilesOf[teamID], f.BeforeID, f.Limit, func(id string) (profile.Profile, bool) {
			p := st.profiles[id]
			if !profileMatches(p, f, query) {
				return profile.Profile{}, false
			}
			return cloneProfile(p), true
		})
		return nil
	})
	return out, err
}

// profileMatches applies the filter's conditions; query is f.Query lowered.
// A status other than idle or running matches nothing.
func profileMatches(p profile.Profile, f profilestore.Filter, query string) bool {
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
// settings, version and UpdatedAt come from p.
func (r profiles) Update(ctx context.Context, p profile.Profile, expectVersion int) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.profileOf(p.TeamID, p.ID)
		if err != nil {
			return err
		}
		if cur.Version != expectVersion {
			return domain.PreconditionFailed("the profile was changed since it was read")
		}
		next := cur
		next.Name, next.TemplateID, next.Browser = p.Name, p.TemplateID, p.Browser
		next.Fingerprint, next.ProxyID, next.Tags, next.Notes = p.Fingerprint, p.ProxyID, p.Tags, p.Notes
		next.Version, next.UpdatedAt = p.Version, p.UpdatedAt
		put(undo, st.profiles, p.ID, cloneProfile(next))
		return nil
	})
}

func (r profiles) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.profileOf(teamID, id)
		if err != nil {
			return err
		}
		if cur.Session != nil {
			return domain.Conflict("profile is running; release it before deleting")
		}
		remove(undo, st.profiles, id)
		st.removeProfileID(undo, teamID, id)
		return nil
	})
}

func (r profiles) SwapSession(ctx context.Context, teamID, id string, s profilestore.SessionSwap) (bool, error) {
	swapped := false
	err := r.s.write(ctx, func(st *state, undo *undoLog) error {
		cur, err := st.profileOf(teamID, id)
		if err != nil {
			return err
		}
		if !sessionMatches(cur.Session, s) {
			return nil
		}
		cur.Session = cloneSession(s.Next)
		put(undo, st.profiles, id, cloneProfile(cur))
		swapped = true
		return nil
	})
	return swapped, err
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

func (r profiles) ListExpiredSessions(ctx context.Context, now time.Time, limit int) ([]profile.Profile, error) {
	var out []profile.Profile
	err := r.s.read(ctx, func(st *state) error {
		out = []profile.Profile{}
		if limit < 1 {
			return nil
		}
		for _, p := range st.profiles {
			if p.Session != nil && !p.Session.ExpiresAt.After(now) {
				out = append(out, p)
			}
		}
		slices.SortFunc(out, func(a, b profile.Profile) int {
			return cmp.Or(a.Session.ExpiresAt.Compare(b.Session.ExpiresAt), cmp.Compare(a.ID, b.ID))
		})
		out = out[:min(limit, len(out))]
		for i := range out {
			out[i] = cloneProfile(out[i])
		}
		return nil
	})
	return out, err
}

type outbox struct{ s *Store }

func (r outbox) Append(ctx context.Context, e event.Event) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if !st.appendEvent(undo, cloneEvent(e)) {
			return domain.Conflict("an event with this id already exists")
		}
		return nil
	})
}

// ListAfter returns nothing for a limit below one rather than everything: a
// caller that computed a bad limit should not pull the whole outbox.
func (r outbox) ListAfter(ctx context.Context, afterID string, limit int) ([]event.Event, error) {
	var out []event.Event
	err := r.s.read(ctx, func(st *state) error {
		out = []event.Event{}
		if limit < 1 {
			return nil
		}
		i, found := slices.BinarySearchFunc(st.outbox, afterID, compareEventID)
		if found {
			i++
		}
		for ; i < len(st.outbox) && len(out) < limit; i++ {
			out = append(out, cloneEvent(st.outbox[i]))
		}
		return nil
	})
	return out, err
}

// ClaimUndispatched needs no lock of its own: a unit of work holds the
// store's write lock until it ends, so no other unit sees the events before
// this one has marked them or rolled back.
func (r outbox) ClaimUndispatched(ctx context.Context, limit int) ([]event.Event, error) {
	var out []event.Event
	err := r.s.read(ctx, func(st *state) error {
		out = []event.Event{}
		if limit < 1 {
			return nil
		}
		for _, id := range st.undispatched[:min(limit, len(st.undispatched))] {
			if i, found := slices.BinarySearchFunc(st.outbox, id, compareEventID); found {
				out = append(out, cloneEvent(st.outbox[i]))
			}
		}
		return nil
	})
	return out, err
}

// MarkDispatched keeps the first dispatch time of an event marked twice and
// ignores ids that are not in the outbox, as an UPDATE would.
func (r outbox) MarkDispatched(ctx context.Context, ids []string, at time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for _, id := range ids {
			if _, found := slices.BinarySearchFunc(st.outbox, id, compareEventID); !found {
				continue
			}
			if _, done := st.dispatched[id]; !done {
				put(undo, st.dispatched, id, at.UTC())
				st.setUndispatched(undo, id, false)
			}
		}
		return nil
	})
}
