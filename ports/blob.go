package ports

import (
	"context"
	"errors"
	"io"
)

// ErrBlobTooLarge is returned (wrapped) by BlobStore.Put when the content
// exceeds the limit the caller gave; transports map it to 413.
var ErrBlobTooLarge = errors.New("blob: content exceeds the size limit")

// BlobInfo describes one stored blob: SHA256 is the lowercase hex sha256 of
// its content, which is also its address.
type BlobInfo struct {
	SHA256 string
	Size   int64
}

// BlobStore keeps large immutable content addressed by its sha256. Content
// is streamed in both directions, never held whole in memory.
//
// Put returns only once the blob is durable, and a blob is visible (Open,
// Stat) only complete. Reference counting is the caller's job: a caller that
// must never delete a blob an upload in progress will refer to records the
// reference in its database after Put returns, and deletes only blobs that
// no row refers to and that are older than a grace period longer than the
// longest upload; Put of content that already exists is cheap, so an upload
// that races a delete can simply Put again.
//
// Malformed hashes (anything but 64 lowercase hex digits) are refused with a
// domain BadRequest error.
type BlobStore interface {
	// Put streams r into the store, computing its hash on the way. Content
	// longer than maxBytes fails with ErrBlobTooLarge; a failing reader or
	// limit leaves nothing behind. Storing content that exists already is
	// idempotent and returns the same BlobInfo.
	Put(ctx context.Context, r io.Reader, maxBytes int64) (BlobInfo, error)
	// Open returns a reader of the blob's content, which the caller closes.
	// A missing blob is a domain NotFound error.
	Open(ctx context.Context, sha256 string) (io.ReadCloser, BlobInfo, error)
	// Stat describes the blob; a missing blob is a domain NotFound error.
	Stat(ctx context.Context, sha256 string) (BlobInfo, error)
	// Delete removes the blob; deleting a missing blob is not an error.
	Delete(ctx context.Context, sha256 string) error
}
