// Package blob holds what the blob store adapters share: the check of a
// blob address and the hashing, size-limited copy of incoming content.
package blob

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

// CheckHash refuses anything but 64 lowercase hex digits, so that a hash
// can be used safely as a file name or a key.
func CheckHash(sum string) error {
	if len(sum) != sha256.Size*2 {
		return domain.BadRequest("blob hash must be 64 lowercase hex digits")
	}
	for _, c := range sum {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return domain.BadRequest("blob hash must be 64 lowercase hex digits")
		}
	}
	return nil
}

// NotFound is the error of a missing blob.
func NotFound() error { return domain.NotFound("blob") }

// Reader reads incoming content once, hashing and counting it, and fails
// with ports.ErrBlobTooLarge past the limit and with the context's error
// once it is done.
type Reader struct {
	ctx  context.Context
	r    io.Reader
	max  int64
	n    int64
	hash hash.Hash
}

// NewReader wraps r; maxBytes is the largest content accepted.
func NewReader(ctx context.Context, r io.Reader, maxBytes int64) *Reader {
	return &Reader{ctx: ctx, r: r, max: maxBytes, hash: sha256.New()}
}

func (r *Reader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	// One byte more than the limit is let through to tell "exactly at the
	// limit" from "over it"; a negative limit takes that one byte too.
	if left := max(r.max, 0) - r.n; left < int64(len(p)) {
		p = p[:left+1]
	}
	n, err := r.r.Read(p)
	r.n += int64(n)
	r.hash.Write(p[:n])
	if r.n > r.max {
		return n, fmt.Errorf("%w (%d bytes)", ports.ErrBlobTooLarge, r.max)
	}
	return n, err
}

// Info is the hash and size of what has been read so far.
func (r *Reader) Info() ports.BlobInfo {
	return ports.BlobInfo{SHA256: hex.EncodeToString(r.hash.Sum(nil)), Size: r.n}
}
