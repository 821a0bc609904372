package bunstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/ports"
)

var _ ports.IdempotencyRecords = idempotencyRepository{}

type idempotencyRow struct {
	bun.BaseModel `bun:"table:idempotency_records,alias:ir"`

	TeamID      string    `bun:"team_id,pk"`
	Scope       string    `bun:"scope,pk"`
	Key         string    `bun:"idem_key,pk"`
	Fingerprint []byte    `bun:"fingerprint"`
	CreatedAt   time.Time `bun:"created_at"`
	ExpiresAt   time.Time `bun:"expires_at"`
	Done        bool      `bun:"done"`
	Withheld    string    `bun:"withheld"`
	Status      int       `bun:"status"`
	Headers     string    `bun:"headers"`
	Body        []byte    `bun:"body"`
}

func newIdempotencyRow(rec ports.IdempotencyRecord) (*idempotencyRow, error) {
	headers, err := json.Marshal(rec.Headers)
	if err != nil {
		return nil, fmt.Errorf("bunstore: encode idempotency headers: %w", err)
	}
	if rec.Headers == nil {
		headers = []byte("{}")
	}
	return &idempotencyRow{
		TeamID: rec.TeamID, Scope: rec.Scope, Key: rec.Key,
		// The columns are NOT NULL; a nil slice would be written as NULL.
		Fingerprint: append([]byte{}, rec.Fingerprint...),
		CreatedAt:   utc(rec.CreatedAt), ExpiresAt: utc(rec.ExpiresAt),
		Done: rec.Done, Withheld: rec.Withheld, Status: rec.Status,
		Headers: string(headers), Body: append([]byte{}, rec.Body...),
	}, nil
}

func (r *idempotencyRow) record() (ports.IdempotencyRecord, error) {
	var headers map[string]string
	if err := json.Unmarshal([]byte(r.Headers), &headers); err != nil {
		return ports.IdempotencyRecord{}, fmt.Errorf("bunstore: decode idempotency headers: %w", err)
	}
	if len(headers) == 0 {
		headers = nil
	}
	var body []byte
	if len(r.Body) > 0 {
		body = r.Body
	}
	return ports.IdempotencyRecord{
		IdempotencyKey: ports.IdempotencyKey{TeamID: r.TeamID, Scope: r.Scope, Key: r.Key},
		Fingerprint:    r.Fingerprint,
		CreatedAt:      utc(r.CreatedAt), ExpiresAt: utc(r.ExpiresAt),
		Done: r.Done, Withheld: r.Withheld, Status: r.Status, Headers: headers, Body: body,
	}, nil
}

type idempotencyRepository struct{ db *bun.DB }

// Claim first removes an expired record of the key, then inserts with ON
// CONFLICT DO NOTHING: on PostgreSQL a claim racing an uncommitted one waits
// for it and inserts nothing once it commits, without aborting the
// transaction; on SQLite units run one at a time.
func (r idempotencyRepository) Claim(ctx context.Context, rec ports.IdempotencyRecord, now time.Time) (bool, error) {
	rec.Done, rec.Withheld, rec.Status, rec.Headers, rec.Body = false, "", 0, nil, nil
	row, err := newIdempotencyRow(rec)
	if err != nil {
		return false, err
	}
	db := conn(ctx, r.db)
	if _, err := db.NewDelete().Model((*idempotencyRow)(nil)).
		Where("team_id = ?", rec.TeamID).Where("scope = ?", rec.Scope).Where("idem_key = ?", rec.Key).
		Where("expires_at <= ?", utc(now)).Exec(ctx); err != nil {
		return false, fmt.Errorf("bunstore: remove expired idempotency record: %w", err)
	}
	res, err := db.NewInsert().Model(row).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return false, fmt.Errorf("bunstore: claim idempotency key: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("bunstore: claim idempotency key: %w", err)
	}
	return n == 1, nil
}

func (r idempotencyRepository) Find(ctx context.Context, k ports.IdempotencyKey, now time.Time) (ports.IdempotencyRecord, bool, error) {
	var row idempotencyRow
	err := conn(ctx, r.db).NewSelect().Model(&row).
		Where("team_id = ?", k.TeamID).Where("scope = ?", k.Scope).Where("idem_key = ?", k.Key).
		Where("expires_at > ?", utc(now)).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.IdempotencyRecord{}, false, nil
	}
	if err != nil {
		return ports.IdempotencyRecord{}, false, readErr(err, "idempotency record")
	}
	rec, err := row.record()
	return rec, err == nil, err
}

func (r idempotencyRepository) Complete(ctx context.Context, rec ports.IdempotencyRecord) error {
	row, err := newIdempotencyRow(rec)
	if err != nil {
		return err
	}
	res, err := conn(ctx, r.db).NewUpdate().Model(row).
		Set("done = TRUE").Set("withheld = ?", row.Withheld).Set("status = ?", row.Status).
		Set("headers = ?", row.Headers).Set("body = ?", row.Body).
		WherePK().Exec(ctx)
	return touchedOne(res, err, "idempotency record")
}

func (r idempotencyRepository) CountLive(ctx context.Context, teamID string, now time.Time) (int, error) {
	n, err := conn(ctx, r.db).NewSelect().Model((*idempotencyRow)(nil)).
		Where("team_id = ?", teamID).Where("expires_at > ?", utc(now)).Count(ctx)
	if err != nil {
		return 0, readErr(err, "idempotency records")
	}
	return int(n), nil
}

// DeleteExpired deletes by key through a bounded subquery: neither dialect
// takes LIMIT on DELETE as bun writes it.
func (r idempotencyRepository) DeleteExpired(ctx context.Context, now time.Time, limit int) (int, error) {
	if limit < 1 {
		return 0, nil
	}
	db := conn(ctx, r.db)
	expired := db.NewSelect().Model((*idempotencyRow)(nil)).Column("team_id", "scope", "idem_key").
		Where("expires_at <= ?", utc(now)).OrderExpr("expires_at ASC").Limit(int64(limit))
	res, err := db.NewDelete().Model((*idempotencyRow)(nil)).
		Where("(team_id, scope, idem_key) IN (?)", expired).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("bunstore: delete expired idempotency records: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("bunstore: delete expired idempotency records: %w", err)
	}
	return int(n), nil
}

// IdempotencyRecords returns the idempotency records.
func (s *Store) IdempotencyRecords() ports.IdempotencyRecords { return idempotencyRepository{db: s.db} }
