// Package postgres keeps blobs in PostgreSQL, in chunks of ChunkSize bytes
// (see the blobs migration). Put writes each chunk in its own statement
// under a fresh upload id, then inserts the blobs row in one statement,
// which makes the blob visible whole at once; no transaction lasts as long
// as an upload. Open reads one chunk at a time.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/uptrace/bun"

	"github.com/profilesvc/profilesvc/adapters/blob"
	"github.com/profilesvc/profilesvc/ports"
)

// ChunkSize is the largest chunk row.
const ChunkSize = 1 << 20

// AbandonedAfter is the age past which chunks no blob refers to are taken
// for the remains of a crashed upload; it is longer than any upload lasts.
const AbandonedAfter = 24 * time.Hour

// Store is a ports.BlobStore on a PostgreSQL database migrated with the
// service's migrations.
type Store struct {
	db      *bun.DB
	timeout time.Duration
}

var _ ports.BlobStore = (*Store)(nil)

// New returns a store on db. Chunks are written through db's database/sql
// pool with bytea sent as a binary parameter (bun would spell it out in hex,
// doubling what goes over the wire); chunkTimeout bounds each chunk's
// statement as bun's query hooks bound the others, zero leaving it
// unbounded.
func New(db *bun.DB, chunkTimeout time.Duration) *Store {
	return &Store{db: db, timeout: chunkTimeout}
}

// Put implements ports.BlobStore.
func (s *Store) Put(ctx context.Context, r io.Reader, maxBytes int64) (ports.BlobInfo, error) {
	var upload int64
	if err := s.db.NewRaw("SELECT nextval('blob_upload_ids')").Scan(ctx, &upload); err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	info, err := s.put(ctx, upload, blob.NewReader(ctx, r, maxBytes))
	if err != nil {
		// Best effort: what is left is swept once abandoned. The caller's
		// context may be the reason of the failure, so it is not used.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = s.dropChunks(cctx, upload)
		return ports.BlobInfo{}, err
	}
	return info, nil
}

func (s *Store) put(ctx context.Context, upload int64, in *blob.Reader) (ports.BlobInfo, error) {
	buf := make([]byte, ChunkSize)
	for n := 0; ; n++ {
		k, err := io.ReadFull(in, buf)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
		}
		if err := s.insertChunk(ctx, upload, n, buf[:k]); err != nil {
			return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
		}
		if k < ChunkSize {
			break
		}
	}
	info := in.Info()
	res, err := s.db.NewRaw("INSERT INTO blobs (sha256, size, upload_id) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
		info.SHA256, info.Size, upload).Exec(ctx)
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("blob put: %w", err)
	}
	if rows, err := res.RowsAffected(); err != nil || rows == 0 {
		// The content was there already (or came in concurrently): the
		// copy just written is not needed.
		if err := s.dropChunks(ctx, upload); err != nil {
			return ports.BlobInfo{}, err
		}
	}
	return info, nil
}

func (s *Store) insertChunk(ctx context.Context, upload int64, n int, data []byte) error {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	_, err := s.db.DB.ExecContext(ctx, "INSERT INTO blob_chunks (upload_id, n, data) VALUES ($1, $2, $3)", upload, n, data)
	return err
}

func (s *Store) dropChunks(ctx context.Context, upload int64) error {
	if _, err := s.db.NewRaw("DELETE FROM blob_chunks WHERE upload_id = ?", upload).Exec(ctx); err != nil {
		return fmt.Errorf("blob put: drop chunks: %w", err)
	}
	return nil
}

type row struct {
	Size     int64 `bun:"size"`
	UploadID int64 `bun:"upload_id"`
}

func (s *Store) lookup(ctx context.Context, sum string) (row, error) {
	if err := blob.CheckHash(sum); err != nil {
		return row{}, err
	}
	var r row
	err := s.db.NewRaw("SELECT size, upload_id FROM blobs WHERE sha256 = ?", sum).Scan(ctx, &r)
	if errors.Is(err, sql.ErrNoRows) {
		return row{}, blob.NotFound()
	}
	if err != nil {
		return row{}, fmt.Errorf("blob lookup: %w", err)
	}
	return r, nil
}

// Open implements ports.BlobStore. The reader reads on ctx, one chunk per
// statement; a blob deleted while it is read fails the read.
func (s *Store) Open(ctx context.Context, sum string) (io.ReadCloser, ports.BlobInfo, error) {
	r, err := s.lookup(ctx, sum)
	if err != nil {
		return nil, ports.BlobInfo{}, err
	}
	return &chunkReader{ctx: ctx, db: s.db, upload: r.UploadID, left: r.Size},
		ports.BlobInfo{SHA256: sum, Size: r.Size}, nil
}

// Stat implements ports.BlobStore.
func (s *Store) Stat(ctx context.Context, sum string) (ports.BlobInfo, error) {
	r, err := s.lookup(ctx, sum)
	if err != nil {
		return ports.BlobInfo{}, err
	}
	return ports.BlobInfo{SHA256: sum, Size: r.Size}, nil
}

// Delete implements ports.BlobStore: the blobs row goes first, so the blob
// is gone at once; its chunks go with it, in the same transaction.
func (s *Store) Delete(ctx context.Context, sum string) error {
	if err := blob.CheckHash(sum); err != nil {
		return err
	}
	_, err := s.db.NewRaw(`WITH gone AS (DELETE FROM blobs WHERE sha256 = ? RETURNING upload_id)
		DELETE FROM blob_chunks WHERE upload_id IN (SELECT upload_id FROM gone)`, sum).Exec(ctx)
	if err != nil {
		return fmt.Errorf("blob delete: %w", err)
	}
	return nil
}

// RemoveAbandoned deletes the chunks of uploads that never became a blob
// and are older than olderThan, and returns how many chunk rows went.
func (s *Store) RemoveAbandoned(ctx context.Context, olderThan time.Duration) (int64, error) {
	res, err := s.db.NewRaw(`DELETE FROM blob_chunks c
		WHERE c.created_at < now() - ? * interval '1 microsecond'
		AND NOT EXISTS (SELECT 1 FROM blobs b WHERE b.upload_id = c.upload_id)`,
		olderThan.Microseconds()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("blob sweep: %w", err)
	}
	return res.RowsAffected()
}

type chunkReader struct {
	ctx    context.Context
	db     *bun.DB
	upload int64
	n      int
	left   int64
	buf    []byte
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.buf) == 0 {
		if c.left == 0 {
			return 0, io.EOF
		}
		c.buf = c.buf[:0]
		err := c.db.NewRaw("SELECT data FROM blob_chunks WHERE upload_id = ? AND n = ?", c.upload, c.n).Scan(c.ctx, &c.buf)
		if errors.Is(err, sql.ErrNoRows) {
			return 0, fmt.Errorf("blob read: chunk %d is missing (deleted while read?)", c.n)
		}
		if err != nil {
			return 0, fmt.Errorf("blob read: %w", err)
		}
		if len(c.buf) == 0 || int64(len(c.buf)) > c.left {
			return 0, fmt.Errorf("blob read: chunk %d has an unexpected size %d", c.n, len(c.buf))
		}
		c.n++
	}
	k := copy(p, c.buf)
	c.buf = c.buf[k:]
	c.left -= int64(k)
	return k, nil
}

func (c *chunkReader) Close() error { return nil }
