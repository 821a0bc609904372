package bunstore

import (
	"context"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

type userRow struct {
	bun.BaseModel `bun:"table:users,alias:u"`

	ID             string    `bun:"id,pk"`
	Email          string    `bun:"email"`
	Name           string    `bun:"name"`
	PasswordHash   string    `bun:"password_hash"`
	DefaultTeamID  string    `bun:"default_team_id"`
	SessionVersion int       `bun:"session_version"`
	CreatedAt      time.Time `bun:"created_at"`
	UpdatedAt      time.Time `bun:"updated_at"`
}

func newUserRow(u account.User) *userRow {
	return &userRow{
		ID:             u.ID,
		Email:          u.Email,
		Name:           u.Name,
		PasswordHash:   u.PasswordHash,
		DefaultTeamID:  u.DefaultTeamID,
		SessionVersion: u.SessionVersion,
		CreatedAt:      utc(u.CreatedAt),
		UpdatedAt:      utc(u.UpdatedAt),
	}
}

func (r *userRow) user() account.User {
	return account.User{
		ID:             r.ID,
		Email:          r.Email,
		Name:           r.Name,
		PasswordHash:   r.PasswordHash,
		DefaultTeamID:  r.DefaultTeamID,
		SessionVersion: r.SessionVersion,
		CreatedAt:      utc(r.CreatedAt),
		UpdatedAt:      utc(r.UpdatedAt),
	}
}

type userRepository struct{ db *bun.DB }

func (r userRepository) Create(ctx context.Context, u account.User) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newUserRow(u)).Exec(ctx); err != nil {
		return writeErr(err, "user", "email already registered")
	}
	return nil
}

func (r userRepository) ByID(ctx context.Context, id string) (account.User, error) {
	return r.one(ctx, "id = ?", id)
}

func (r userRepository) ByEmail(ctx context.Context, email string) (account.User, error) {
	return r.one(ctx, "lower(email) = lower(?)", email)
}

func (r userRepository) one(ctx context.Context, where string, arg string) (account.User, error) {
	var row userRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where(where, arg).Scan(ctx); err != nil {
		return account.User{}, readErr(err, "user")
	}
	return row.user(), nil
}

func (r userRepository) UpdatePassword(ctx context.Context, id, passwordHash string, at time.Time) error {
	res, err := conn(ctx, r.db).NewUpdate().Model((*userRow)(nil)).
		Set("password_hash = ?", passwordHash).
		Set("updated_at = ?", utc(at)).
		Where("id = ?", id).
		Exec(ctx)
	return touchedOne(res, err, "user")
}

// EndSessions raises the version in the database, so that concurrent calls
// each count.
func (r userRepository) EndSessions(ctx context.Context, id string, at time.Time) (int, error) {
	var version int
	err := conn(ctx, r.db).NewUpdate().Model((*userRow)(nil)).
		Set("session_version = session_version + 1").
		Set("updated_at = ?", utc(at)).
		Where("id = ?", id).
		Returning("session_version").
		Scan(ctx, &version)
	if err != nil {
		return 0, readErr(err, "user")
	}
	return version, nil
}

// ListByIDs reads every user of ids with one query; no ids need no query.
func (r userRepository) ListByIDs(ctx context.Context, ids []string) ([]account.User, error) {
	if len(ids) == 0 {
		return []account.User{}, nil
	}
	var rows []userRow
	if err := conn(ctx, r.db).NewSelect().Model(&rows).Where("id IN (?)", bun.List(ids)).Scan(ctx); err != nil {
		return nil, readErr(err, "users")
	}
	users := make([]account.User, 0, len(rows))
	for i := range rows {
		users = append(users, rows[i].user())
	}
	return users, nil
}

// Users returns the user repository.
func (s *Store) Users() accountstore.Users { return userRepository{db: s.db} }
