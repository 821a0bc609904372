package memory

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

type users struct{ s *Store }

// Create checks the email by scanning: the rule is what matters here, and
// the store's lock makes the check and the insert one step.
func (r users) Create(ctx context.Context, u account.User) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		email := account.NormalizeEmail(u.Email)
		if st.users.exists(func(o *account.User) bool { return account.NormalizeEmail(o.Email) == email }) {
			return domain.Conflict("a user with this email already exists")
		}
		return st.users.insert(undo, u)
	})
}

func (r users) ByID(ctx context.Context, id string) (account.User, error) {
	return readValue(ctx, r.s, func(st *state) (account.User, error) { return st.users.get(id) })
}

func (r users) ByEmail(ctx context.Context, email string) (account.User, error) {
	email = account.NormalizeEmail(email)
	return readValue(ctx, r.s, func(st *state) (account.User, error) {
		return st.users.find(func(u *account.User) bool { return account.NormalizeEmail(u.Email) == email })
	})
}

func (r users) UpdatePassword(ctx context.Context, id, passwordHash string, at time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		u, err := st.users.get(id)
		if err != nil {
			return err
		}
		u.PasswordHash, u.UpdatedAt = passwordHash, at
		st.users.put(undo, u)
		return nil
	})
}

func (r users) EndSessions(ctx context.Context, id string, at time.Time) (int, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) (int, error) {
		u, err := st.users.get(id)
		if err != nil {
			return 0, err
		}
		u.SessionVersion++
		u.UpdatedAt = at
		st.users.put(undo, u)
		return u.SessionVersion, nil
	})
}

// ListByIDs skips unknown ids and returns a user named twice once.
func (r users) ListByIDs(ctx context.Context, ids []string) ([]account.User, error) {
	return readValue(ctx, r.s, func(st *state) ([]account.User, error) {
		return st.users.query(func(u *account.User) bool { return slices.Contains(ids, u.ID) }, nil, unlimited), nil
	})
}

type apiKeys struct{ s *Store }

func (r apiKeys) Create(ctx context.Context, k account.APIKey) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.apiKeys.insert(undo, k) })
}

// ByID ignores the team: authentication learns the team from the key.
func (r apiKeys) ByID(ctx context.Context, id string) (account.APIKey, error) {
	return readValue(ctx, r.s, func(st *state) (account.APIKey, error) { return st.apiKeys.get(id) })
}

// ListByUser breaks ties by id, so that the order never depends on map order.
func (r apiKeys) ListByUser(ctx context.Context, teamID, userID string) ([]account.APIKey, error) {
	return readValue(ctx, r.s, func(st *state) ([]account.APIKey, error) {
		return st.apiKeys.query(func(k *account.APIKey) bool {
			return k.TeamID == teamID && k.UserID == userID
		}, func(a, b *account.APIKey) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
		}, unlimited), nil
	})
}

func (r apiKeys) Touch(ctx context.Context, id string, at time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		k, err := st.apiKeys.get(id)
		if err != nil {
			if domain.IsKind(err, domain.KindNotFound) {
				return nil
			}
			return err
		}
		if k.LastUsedAt == nil || k.LastUsedAt.Before(at) {
			k.LastUsedAt = &at
			st.apiKeys.put(undo, k)
		}
		return nil
	})
}

func (r apiKeys) Delete(ctx context.Context, teamID, id string) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		if _, err := st.apiKeys.inTeam(teamID, id); err != nil {
			return err
		}
		st.apiKeys.remove(undo, id)
		return nil
	})
}

func (r apiKeys) DeleteByUser(ctx context.Context, userID string) ([]string, error) {
	return r.deleteWhere(ctx, func(k *account.APIKey) bool { return k.UserID == userID })
}

func (r apiKeys) DeleteByMember(ctx context.Context, teamID, userID string) ([]string, error) {
	return r.deleteWhere(ctx, func(k *account.APIKey) bool { return k.TeamID == teamID && k.UserID == userID })
}

// deleteWhere returns the deleted ids in id order, as the SQL stores do.
func (r apiKeys) deleteWhere(ctx context.Context, match func(*account.APIKey) bool) ([]string, error) {
	return writeValue(ctx, r.s, func(st *state, undo *undoLog) ([]string, error) {
		ids := []string{}
		for _, k := range st.apiKeys.query(match, st.apiKeys.lowestIDFirst, unlimited) {
			st.apiKeys.remove(undo, k.ID)
			ids = append(ids, k.ID)
		}
		return ids, nil
	})
}

type refreshTokens struct{ s *Store }

func (r refreshTokens) Create(ctx context.Context, t account.RefreshToken) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.refresh.insert(undo, t) })
}

func (r refreshTokens) ByID(ctx context.Context, id string) (account.RefreshToken, error) {
	return readValue(ctx, r.s, func(st *state) (account.RefreshToken, error) { return st.refresh.get(id) })
}

func (r refreshTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	return consume(ctx, r.s, func(st *state) *table[account.RefreshToken] { return &st.refresh }, id,
		func(t *account.RefreshToken) bool {
			if t.UsedAt != nil || t.RevokedAt != nil {
				return false
			}
			t.UsedAt = &at
			return true
		})
}

func (r refreshTokens) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	return r.revokeWhere(ctx, at, func(t *account.RefreshToken) bool { return t.FamilyID == familyID })
}

func (r refreshTokens) RevokeUser(ctx context.Context, userID string, at time.Time) error {
	return r.revokeWhere(ctx, at, func(t *account.RefreshToken) bool { return t.UserID == userID })
}

// revokeWhere keeps the first revocation time of a token already revoked, so
// that the time a family was first compromised is not overwritten.
func (r refreshTokens) revokeWhere(ctx context.Context, at time.Time, match func(*account.RefreshToken) bool) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		live := st.refresh.query(func(t *account.RefreshToken) bool { return t.RevokedAt == nil && match(t) }, nil, unlimited)
		for _, t := range live {
			t.RevokedAt = &at
			st.refresh.put(undo, t)
		}
		return nil
	})
}

type resetTokens struct{ s *Store }

func (r resetTokens) Create(ctx context.Context, t account.ResetToken) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error { return st.resets.insert(undo, t) })
}

func (r resetTokens) ByID(ctx context.Context, id string) (account.ResetToken, error) {
	return readValue(ctx, r.s, func(st *state) (account.ResetToken, error) { return st.resets.get(id) })
}

func (r resetTokens) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	return consume(ctx, r.s, func(st *state) *table[account.ResetToken] { return &st.resets }, id,
		func(t *account.ResetToken) bool {
			if t.UsedAt != nil {
				return false
			}
			t.UsedAt = &at
			return true
		})
}

func (r resetTokens) ConsumeUser(ctx context.Context, userID string, at time.Time) error {
	return r.s.write(ctx, func(st *state, undo *undoLog) error {
		for _, t := range st.resets.query(func(t *account.ResetToken) bool { return t.UserID == userID && t.UsedAt == nil }, nil, unlimited) {
			t.UsedAt = &at
			st.resets.put(undo, t)
		}
		return nil
	})
}

// consume is the one-time use of a token or invitation: use marks the row
// used and reports true, or reports false when it may no longer be used.
// A missing id is not found, as in the SQL stores, so a caller can tell a
// token that never existed from one already spent. The store's lock makes
// the check and the mark one step, so of concurrent callers one wins.
func consume[T any](ctx context.Context, s *Store, tableOf func(*state) *table[T], id string, use func(*T) bool) (bool, error) {
	return writeValue(ctx, s, func(st *state, undo *undoLog) (bool, error) {
		t := tableOf(st)
		v, err := t.get(id)
		if err != nil || !use(&v) {
			return false, err
		}
		t.put(undo, v)
		return true, nil
	})
}

// Users returns the user repository.
func (s *Store) Users() accountstore.Users { return users{s: s} }

// APIKeys returns the API key repository.
func (s *Store) APIKeys() accountstore.APIKeys { return apiKeys{s: s} }

// RefreshTokens returns the refresh token repository.
func (s *Store) RefreshTokens() accountstore.RefreshTokens { return refreshTokens{s: s} }

// ResetTokens returns the reset token repository.
func (s *Store) ResetTokens() accountstore.ResetTokens { return resetTokens{s: s} }
