package bunstore

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"github.com/profilesvc/profilesvc/ports/snapshotstore"
)

// blobUploadRow is an upload in progress.
type blobUploadRow struct {
	bun.BaseModel `bun:"table:blob_uploads,alias:bu"`

	ID        string    `bun:"id,pk"`
	ExpiresAt time.Time `bun:"expires_at"`
}

// blobGarbageRow is a blob that may have lost its last reference.
type blobGarbageRow struct {
	bun.BaseModel `bun:"table:blob_garbage,alias:bg"`

	SHA256     string    `bun:"sha256,pk"`
	ReleasedAt time.Time `bun:"released_at"`
}

// blobReferenced holds for a blob_garbage row (alias bg) whose blob a
// profile or a snapshot of any team refers to; each test reads a partial
// index on the sha256 column.
const blobReferenced = `(EXISTS (SELECT 1 FROM profiles AS rp WHERE rp.data_sha256 = bg.sha256)
	OR EXISTS (SELECT 1 FROM profiles AS rp WHERE rp.cookies_sha256 = bg.sha256)
	OR EXISTS (SELECT 1 FROM snapshots AS rs WHERE rs.data_sha256 = bg.sha256)
	OR EXISTS (SELECT 1 FROM snapshots AS rs WHERE rs.cookies_sha256 = bg.sha256))`

type blobRefRepository struct{ db *bun.DB }

// BeginUpload inserts into blob_uploads, which waits on PostgreSQL for a
// unit that called UploadsInProgress (it holds a lock that conflicts with
// inserts) and on SQLite for any unit (one connection).
func (r blobRefRepository) BeginUpload(ctx context.Context, id string, expiresAt time.Time) error {
	row := &blobUploadRow{ID: id, ExpiresAt: utc(expiresAt)}
	if _, err := conn(ctx, r.db).NewInsert().Model(row).Exec(ctx); err != nil {
		return writeErr(err, "blob upload", "upload already registered")
	}
	return nil
}

func (r blobRefRepository) EndUpload(ctx context.Context, id string) error {
	if _, err := conn(ctx, r.db).NewDelete().Model((*blobUploadRow)(nil)).Where("id = ?", id).Exec(ctx); err != nil {
		return fmt.Errorf("bunstore: write blob upload: %w", err)
	}
	return nil
}

// Release writes each candidate once, keeping the later of the stored and
// the given time: a statement may not touch one row twice on PostgreSQL.
func (r blobRefRepository) Release(ctx context.Context, at time.Time, sha256s ...string) error {
	if len(sha256s) == 0 {
		return nil
	}
	shas := slices.Clone(sha256s)
	slices.Sort(shas)
	shas = slices.Compact(shas)
	rows := make([]blobGarbageRow, len(shas))
	for i, sha := range shas {
		rows[i] = blobGarbageRow{SHA256: sha, ReleasedAt: utc(at)}
	}
	_, err := conn(ctx, r.db).NewInsert().Model(&rows).
		On("CONFLICT (sha256) DO UPDATE").
		Set("released_at = CASE WHEN EXCLUDED.released_at > bg.released_at THEN EXCLUDED.released_at ELSE bg.released_at END").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: write blob candidates: %w", err)
	}
	return nil
}

// UploadsInProgress, in a unit on PostgreSQL, first locks blob_uploads in
// SHARE ROW EXCLUSIVE mode, which conflicts with the ROW EXCLUSIVE lock an
// INSERT takes: BeginUpload in any other transaction then waits until the
// unit ends, and none already committed is missed by the count. On SQLite
// the unit holds the one connection, which keeps out every other write.
func (r blobRefRepository) UploadsInProgress(ctx context.Context, now time.Time) (bool, error) {
	db := conn(ctx, r.db)
	if _, inUnit := db.(bun.Tx); inUnit && db.Dialect().Name() == dialect.PG {
		if _, err := db.ExecContext(ctx, "LOCK TABLE blob_uploads IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return false, fmt.Errorf("bunstore: lock blob uploads: %w", err)
		}
	}
	exists, err := db.NewSelect().Model((*blobUploadRow)(nil)).Where("expires_at > ?", utc(now)).Exists(ctx)
	if err != nil {
		return false, readErr(err, "blob uploads")
	}
	return exists, nil
}

// Garbage first deletes the due candidates that are referred to, then
// returns the earliest released of the rest, ties by sha256. On PostgreSQL
// both statements lock the candidates they take and skip those another
// transaction has locked, so that concurrent collectors take disjoint
// candidates and never wait for each other.
func (r blobRefRepository) Garbage(ctx context.Context, releasedBy time.Time, limit int) ([]string, error) {
	db := conn(ctx, r.db)
	pg := db.Dialect().Name() == dialect.PG
	by := utc(releasedBy)

	referenced := db.NewSelect().Model((*blobGarbageRow)(nil)).Column("sha256").
		Where("released_at <= ?", by).Where(blobReferenced)
	if pg {
		referenced = referenced.For("UPDATE SKIP LOCKED")
	}
	_, err := db.NewDelete().Model((*blobGarbageRow)(nil)).Where("sha256 IN (?)", referenced).Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("bunstore: write blob candidates: %w", err)
	}
	if limit < 1 {
		return []string{}, nil
	}
	q := db.NewSelect().Model((*blobGarbageRow)(nil)).Column("sha256").
		Where("released_at <= ?", by).Where("NOT " + blobReferenced).
		OrderExpr("released_at ASC, sha256 ASC").Limit(int64(limit))
	if pg {
		q = q.For("UPDATE SKIP LOCKED")
	}
	out := []string{}
	if err := q.Scan(ctx, &out); err != nil {
		return nil, readErr(err, "blob candidates")
	}
	return out, nil
}

func (r blobRefRepository) Forget(ctx context.Context, sha256s ...string) error {
	if len(sha256s) == 0 {
		return nil
	}
	_, err := conn(ctx, r.db).NewDelete().Model((*blobGarbageRow)(nil)).Where("sha256 IN (?)", bun.List(sha256s)).Exec(ctx)
	if err != nil {
		return fmt.Errorf("bunstore: write blob candidates: %w", err)
	}
	return nil
}

// BlobRefs returns the blob reference repository.
func (s *Store) BlobRefs() snapshotstore.BlobRefs { return blobRefRepository{db: s.db} }
