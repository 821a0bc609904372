package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
)

// Each repository is bound to a unit of work when tx is set, and makes each
// call on its own otherwise.

type users struct {
	s  *Store
	tx *txn
}

func (r users) Create(ctx context.Context, u account.User) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
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
	err := r.s.read(ctx, r.tx, func(st *state) error {
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
	err := r.s.read(ctx, r.tx, func(st *state) error {
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
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		u, ok := st.users[id]
		if !ok {
			return domain.NotFound("user")
		}
		u.PasswordHash, u.UpdatedAt = passwordHash, at.UTC()
		put(undo, st.users, id, u)
		return nil
	})
}

type teams struct {
	s  *Store
	tx *txn
}

func (r teams) Create(ctx context.Context, t team.Team) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		if _, taken := st.teams[t.ID]; taken {
			return domain.Conflict("a team with this id already exists")
		}
		put(undo, st.teams, t.ID, cloneTeam(t))
		return nil
	})
}

func (r teams) ByID(ctx context.Context, id string) (team.Team, error) {
	var t team.Team
	err := r.s.read(ctx, r.tx, func(st *state) error {
		found, ok := st.teams[id]
		if !ok {
			return domain.NotFound("team")
		}
		t = cloneTeam(found)
		return nil
	})
	return t, err
}

type memberships struct {
	s  *Store
	tx *txn
}

func (r memberships) Create(ctx context.Context, m team.Member) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		key := memberKey{m.TeamID, m.UserID}
		if _, taken := st.memberOf[key]; taken {
			return domain.Conflict("the user is already a member of this team")
		}
		if _, taken := st.members[m.ID]; taken {
			return domain.Conflict("a membership with this id already exists")
		}
		put(undo, st.members, m.ID, cloneMember(m))
		put(undo, st.memberOf, key, m.ID)
		return nil
	})
}

func (r memberships) ByUser(ctx context.Context, teamID, userID string) (team.Member, error) {
	var m team.Member
	err := r.s.read(ctx, r.tx, func(st *state) error {
		id, ok := st.memberOf[memberKey{teamID, userID}]
		if !ok {
			return domain.NotFound("membership")
		}
		m = cloneMember(st.members[id])
		return nil
	})
	return m, err
}

func (r memberships) ListByUser(ctx context.Context, userID string) ([]team.Member, error) {
	var out []team.Member
	err := r.s.read(ctx, r.tx, func(st *state) error {
		out = []team.Member{}
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

type apiKeys struct {
	s  *Store
	tx *txn
}

func (r apiKeys) Create(ctx context.Context, k account.APIKey) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		if _, taken := st.apiKeys[k.ID]; taken {
			return domain.Conflict("an API key with this id already exists")
		}
		put(undo, st.apiKeys, k.ID, cloneAPIKey(k))
		return nil
	})
}

func (r apiKeys) ByID(ctx context.Context, id string) (account.APIKey, error) {
	var k account.APIKey
	err := r.s.read(ctx, r.tx, func(st *state) error {
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
	err := r.s.read(ctx, r.tx, func(st *state) error {
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
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		k, ok := st.apiKeys[id]
		if !ok || k.TeamID != teamID {
			return domain.NotFound("API key")
		}
		remove(undo, st.apiKeys, id)
		return nil
	})
}

type refreshTokens struct {
	s  *Store
	tx *txn
}

func (r refreshTokens) Create(ctx context.Context, t account.RefreshToken) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		if _, taken := st.refresh[t.ID]; taken {
			return domain.Conflict("a refresh token with this id already exists")
		}
		put(undo, st.refresh, t.ID, cloneRefreshToken(t))
		return nil
	})
}

func (r refreshTokens) ByID(ctx context.Context, id string) (account.RefreshToken, error) {
	var t account.RefreshToken
	err := r.s.read(ctx, r.tx, func(st *state) error {
		found, ok := st.refresh[id]
		if !ok {
			return domain.NotFound("refresh token")
		}
		t = cloneRefreshToken(found)
		return nil
	})
	return t, err
}

// Consume reports an unknown id as false, like a used one: the caller has
// already looked the token up, and either way it may not be exchanged.
func (r refreshTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	consumed := false
	err := r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		t, ok := st.refresh[id]
		if !ok || t.UsedAt != nil || t.RevokedAt != nil {
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
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		for id, t := range st.refresh {
			if t.RevokedAt == nil && match(t) {
				t.RevokedAt = utcPtr(&at)
				put(undo, st.refresh, id, t)
			}
		}
		return nil
	})
}

type resetTokens struct {
	s  *Store
	tx *txn
}

func (r resetTokens) Create(ctx context.Context, t account.ResetToken) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		if _, taken := st.resets[t.ID]; taken {
			return domain.Conflict("a reset token with this id already exists")
		}
		put(undo, st.resets, t.ID, cloneResetToken(t))
		return nil
	})
}

func (r resetTokens) ByID(ctx context.Context, id string) (account.ResetToken, error) {
	var t account.ResetToken
	err := r.s.read(ctx, r.tx, func(st *state) error {
		found, ok := st.resets[id]
		if !ok {
			return domain.NotFound("reset token")
		}
		t = cloneResetToken(found)
		return nil
	})
	return t, err
}

// Consume reports an unknown id as false, as refreshTokens.Consume does.
func (r resetTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	consumed := false
	err := r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
		t, ok := st.resets[id]
		if !ok || t.UsedAt != nil {
			return nil
		}
		t.UsedAt = utcPtr(&at)
		put(undo, st.resets, id, t)
		consumed = true
		return nil
	})
	return consumed, err
}

type outbox struct {
	s  *Store
	tx *txn
}

func (r outbox) Append(ctx context.Context, e event.Event) error {
	return r.s.write(ctx, r.tx, func(st *state, undo *undoLog) error {
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
	err := r.s.read(ctx, r.tx, func(st *state) error {
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
