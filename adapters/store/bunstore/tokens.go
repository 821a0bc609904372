package bunstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

type refreshTokenRow struct {
	bun.BaseModel `bun:"table:refresh_tokens,alias:rt"`

	ID        string     `bun:"id,pk"`
	FamilyID  string     `bun:"family_id"`
	UserID    string     `bun:"user_id"`
	TeamID    string     `bun:"team_id"`
	Hash      []byte     `bun:"hash"`
	IssuedAt  time.Time  `bun:"issued_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

func newRefreshTokenRow(t account.RefreshToken) *refreshTokenRow {
	return &refreshTokenRow{
		ID:        t.ID,
		FamilyID:  t.FamilyID,
		UserID:    t.UserID,
		TeamID:    t.TeamID,
		Hash:      t.Hash,
		IssuedAt:  utc(t.IssuedAt),
		ExpiresAt: utc(t.ExpiresAt),
		UsedAt:    utcPtr(t.UsedAt),
		RevokedAt: utcPtr(t.RevokedAt),
	}
}

func (r *refreshTokenRow) refreshToken() account.RefreshToken {
	return account.RefreshToken{
		ID:        r.ID,
		FamilyID:  r.FamilyID,
		UserID:    r.UserID,
		TeamID:    r.TeamID,
		Hash:      r.Hash,
		IssuedAt:  utc(r.IssuedAt),
		ExpiresAt: utc(r.ExpiresAt),
		UsedAt:    utcPtr(r.UsedAt),
		RevokedAt: utcPtr(r.RevokedAt),
	}
}

type refreshTokenRepository struct{ db *bun.DB }

func (r refreshTokenRepository) Create(ctx context.Context, t account.RefreshToken) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newRefreshTokenRow(t)).Exec(ctx); err != nil {
		return writeErr(err, "refresh token", "refresh token already exists")
	}
	return nil
}

func (r refreshTokenRepository) ByID(ctx context.Context, id string) (account.RefreshToken, error) {
	var row refreshTokenRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return account.RefreshToken{}, readErr(err, "refresh token")
	}
	return row.refreshToken(), nil
}

// Consume is one conditional UPDATE, so the database decides which of
// concurrent callers wins: only one of them can find used_at still NULL.
func (r refreshTokenRepository) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := conn(ctx, r.db).NewUpdate().Model((*refreshTokenRow)(nil)).
		Set("used_at = ?", utc(at)).
		Where("id = ?", id).
		Where("used_at IS NULL").
		Where("revoked_at IS NULL").
		Exec(ctx)
	return consumed(ctx, conn(ctx, r.db), res, err, (*refreshTokenRow)(nil), id, "refresh token")
}

func (r refreshTokenRepository) RevokeFamily(ctx context.Context, familyID string, at time.Time) error {
	_, err := conn(ctx, r.db).NewUpdate().Model((*refreshTokenRow)(nil)).
		Set("revoked_at = ?", utc(at)).
		Where("family_id = ?", familyID).
		Where("revoked_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: revoke refresh token family: %w", err)
	}
	return nil
}

func (r refreshTokenRepository) RevokeUser(ctx context.Context, userID string, at time.Time) error {
	_, err := conn(ctx, r.db).NewUpdate().Model((*refreshTokenRow)(nil)).
		Set("revoked_at = ?", utc(at)).
		Where("user_id = ?", userID).
		Where("revoked_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: revoke refresh tokens of user: %w", err)
	}
	return nil
}

type resetTokenRow struct {
	bun.BaseModel `bun:"table:reset_tokens,alias:pr"`

	ID        string     `bun:"id,pk"`
	UserID    string     `bun:"user_id"`
	Hash      []byte     `bun:"hash"`
	CreatedAt time.Time  `bun:"created_at"`
	ExpiresAt time.Time  `bun:"expires_at"`
	UsedAt    *time.Time `bun:"used_at"`
}

func newResetTokenRow(t account.ResetToken) *resetTokenRow {
	return &resetTokenRow{
		ID:        t.ID,
		UserID:    t.UserID,
		Hash:      t.Hash,
		CreatedAt: utc(t.CreatedAt),
		ExpiresAt: utc(t.ExpiresAt),
		UsedAt:    utcPtr(t.UsedAt),
	}
}

func (r *resetTokenRow) resetToken() account.ResetToken {
	return account.ResetToken{
		ID:        r.ID,
		UserID:    r.UserID,
		Hash:      r.Hash,
		CreatedAt: utc(r.CreatedAt),
		ExpiresAt: utc(r.ExpiresAt),
		UsedAt:    utcPtr(r.UsedAt),
	}
}

type resetTokenRepository struct{ db *bun.DB }

func (r resetTokenRepository) Create(ctx context.Context, t account.ResetToken) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newResetTokenRow(t)).Exec(ctx); err != nil {
		return writeErr(err, "reset token", "reset token already exists")
	}
	return nil
}

func (r resetTokenRepository) ByID(ctx context.Context, id string) (account.ResetToken, error) {
	var row resetTokenRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return account.ResetToken{}, readErr(err, "reset token")
	}
	return row.resetToken(), nil
}

// Consume: see refreshTokenRepository.Consume.
func (r resetTokenRepository) Consume(ctx context.Context, id string, at time.Time) (bool, error) {
	res, err := conn(ctx, r.db).NewUpdate().Model((*resetTokenRow)(nil)).
		Set("used_at = ?", utc(at)).
		Where("id = ?", id).
		Where("used_at IS NULL").
		Exec(ctx)
	return consumed(ctx, conn(ctx, r.db), res, err, (*resetTokenRow)(nil), id, "reset token")
}

func (r resetTokenRepository) ConsumeUser(ctx context.Context, userID string, at time.Time) error {
	_, err := conn(ctx, r.db).NewUpdate().Model((*resetTokenRow)(nil)).
		Set("used_at = ?", utc(at)).
		Where("user_id = ?", userID).
		Where("used_at IS NULL").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: consume reset tokens of user: %w", err)
	}
	return nil
}

// consumed reads the outcome of a consuming UPDATE: one row changed means
// this caller consumed the token. When none changed, the token was either
// taken already (false) or never existed (not found).
func consumed(ctx context.Context, db bun.IDB, res sql.Result, err error, model any, id, what string) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("bunstore: consume %s: %w", what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("bunstore: consume %s: %w", what, err)
	}
	if n == 1 {
		return true, nil
	}
	exists, err := db.NewSelect().Model(model).Where("id = ?", id).Exists(ctx)
	if err != nil {
		return false, readErr(err, what)
	}
	if !exists {
		return false, domain.NotFound(what)
	}
	return false, nil
}

// RefreshTokens returns the refresh token repository.
func (s *Store) RefreshTokens() accountstore.RefreshTokens { return refreshTokenRepository{db: s.db} }

// ResetTokens returns the reset token repository.
func (s *Store) ResetTokens() accountstore.ResetTokens { return resetTokenRepository{db: s.db} }
