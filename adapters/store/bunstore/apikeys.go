package bunstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/domain/account"
	"github.com/profilesvc/profilesvc/ports/accountstore"
)

type apiKeyRow struct {
	bun.BaseModel `bun:"table:api_keys,alias:k"`

	ID         string     `bun:"id,pk"`
	TeamID     string     `bun:"team_id"`
	UserID     string     `bun:"user_id"`
	Name       string     `bun:"name"`
	Prefix     string     `bun:"prefix"`
	Hash       []byte     `bun:"hash"`
	CreatedAt  time.Time  `bun:"created_at"`
	LastUsedAt *time.Time `bun:"last_used_at"`
}

func newAPIKeyRow(k account.APIKey) *apiKeyRow {
	return &apiKeyRow{
		ID:         k.ID,
		TeamID:     k.TeamID,
		UserID:     k.UserID,
		Name:       k.Name,
		Prefix:     k.Prefix,
		Hash:       k.Hash,
		CreatedAt:  utc(k.CreatedAt),
		LastUsedAt: utcPtr(k.LastUsedAt),
	}
}

func (r *apiKeyRow) apiKey() account.APIKey {
	return account.APIKey{
		ID:         r.ID,
		TeamID:     r.TeamID,
		UserID:     r.UserID,
		Name:       r.Name,
		Prefix:     r.Prefix,
		Hash:       r.Hash,
		CreatedAt:  utc(r.CreatedAt),
		LastUsedAt: utcPtr(r.LastUsedAt),
	}
}

type apiKeyRepository struct{ db *bun.DB }

func (r apiKeyRepository) Create(ctx context.Context, k account.APIKey) error {
	if _, err := conn(ctx, r.db).NewInsert().Model(newAPIKeyRow(k)).Exec(ctx); err != nil {
		return writeErr(err, "api key", "api key already exists")
	}
	return nil
}

func (r apiKeyRepository) ByID(ctx context.Context, id string) (account.APIKey, error) {
	var row apiKeyRow
	if err := conn(ctx, r.db).NewSelect().Model(&row).Where("id = ?", id).Scan(ctx); err != nil {
		return account.APIKey{}, readErr(err, "api key")
	}
	return row.apiKey(), nil
}

func (r apiKeyRepository) ListByUser(ctx context.Context, teamID, userID string) ([]account.APIKey, error) {
	var rows []apiKeyRow
	err := conn(ctx, r.db).NewSelect().Model(&rows).
		Where("team_id = ?", teamID).
		Where("user_id = ?", userID).
		OrderExpr("created_at DESC, id DESC").
		Scan(ctx)
	if err != nil {
		return nil, readErr(err, "api keys")
	}
	keys := make([]account.APIKey, 0, len(rows))
	for i := range rows {
		keys = append(keys, rows[i].apiKey())
	}
	return keys, nil
}

func (r apiKeyRepository) Touch(ctx context.Context, id string, at time.Time) error {
	_, err := conn(ctx, r.db).NewUpdate().Model((*apiKeyRow)(nil)).
		Set("last_used_at = ?", at.UTC()).
		Where("id = ?", id).
		Where("last_used_at IS NULL OR last_used_at < ?", at.UTC()).
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: write api key use: %w", err)
	}
	return nil
}

func (r apiKeyRepository) Delete(ctx context.Context, teamID, id string) error {
	res, err := conn(ctx, r.db).NewDelete().Model((*apiKeyRow)(nil)).
		Where("id = ?", id).
		Where("team_id = ?", teamID).
		Exec(ctx)
	return touchedOne(res, err, "api key")
}

func (r apiKeyRepository) DeleteByUser(ctx context.Context, userID string) ([]string, error) {
	return r.deleteReturning(ctx, "DELETE FROM api_keys WHERE user_id = ? RETURNING id", userID)
}

func (r apiKeyRepository) DeleteByMember(ctx context.Context, teamID, userID string) ([]string, error) {
	return r.deleteReturning(ctx, "DELETE FROM api_keys WHERE team_id = ? AND user_id = ? RETURNING id", teamID, userID)
}

// deleteReturning deletes and reads the deleted ids in one statement, so a
// key cannot slip between a read and the delete; the ids come back in id
// order, as in every store.
func (r apiKeyRepository) deleteReturning(ctx context.Context, query string, args ...any) ([]string, error) {
	ids := []string{}
	if err := conn(ctx, r.db).NewRaw(query, args...).Scan(ctx, &ids); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("bunstore: delete api keys: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}

// APIKeys returns the API key repository.
func (s *Store) APIKeys() accountstore.APIKeys { return apiKeyRepository{db: s.db} }
