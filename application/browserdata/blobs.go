// Package browserdata owns a profile's browser data and cookies: the
// archive and the cookie list as clients download and upload them, how
// both are kept in the blob store (cleaned, shared by content), the
// uploads in progress, and the collector that deletes the blobs nothing
// refers to any more. A profile changes through the profiles module
// (Profiles.ChangeIdle), under its rules.
package browserdata

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	domaindata "github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/ports"
)

// BlobRefs is the bookkeeping of which blobs may go
// (snapshotstore.BlobRefs has it): the uploads in progress, the blobs
// that may have lost their last reference, and the collector's reads.
type BlobRefs interface {
	BeginUpload(ctx context.Context, id string, expiresAt time.Time) error
	EndUpload(ctx context.Context, id string) error
	Release(ctx context.Context, at time.Time, sha256s ...string) error
	UploadsInProgress(ctx context.Context, now time.Time) (bool, error)
	Garbage(ctx context.Context, releasedBy time.Time, limit int) ([]string, error)
	Forget(ctx context.Context, sha256s ...string) error
}

// BlobsDeps are the ports of Blobs.
type BlobsDeps struct {
	Tx       ports.UnitOfWork
	Blobs    ports.BlobStore
	BlobRefs BlobRefs
	Clock    ports.Clock
	IDs      ports.IDs
	Log      *slog.Logger
	// DataMax is the largest browser-data archive accepted, in bytes.
	DataMax int64
	// UploadTimeout bounds one upload of browser data or cookies, from its
	// first byte to the profile referring to it.
	UploadTimeout time.Duration
}

// Blobs keeps browser data and cookies in the blob store, for the use
// cases of this module and for the browsers the profiles module runs: an
// archive is stored cleaned, a cookie list in one JSON shape, so that
// equal content shares one blob; and every store happens in an upload
// registered as in progress, which the collector waits for.
type Blobs struct {
	d BlobsDeps
}

// NewBlobs returns the blobs of browser data and cookies.
func NewBlobs(d BlobsDeps) *Blobs {
	if d.DataMax <= 0 {
		d.DataMax = 512 << 20
	}
	if d.UploadTimeout <= 0 {
		d.UploadTimeout = time.Hour
	}
	return &Blobs{d: d}
}

// DataMax is the largest browser-data archive accepted, in bytes.
func (b *Blobs) DataMax() int64 { return b.d.DataMax }

// Upload runs fn as a registered upload in progress, bounded by the
// upload time-out, so that the collector deletes no blob fn may come to
// refer to. PutArchive and PutCookies store content only inside one.
func (b *Blobs) Upload(ctx context.Context, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, b.d.UploadTimeout)
	defer cancel()
	uploadID := b.d.IDs.New("upl")
	if err := b.d.BlobRefs.BeginUpload(ctx, uploadID, b.d.Clock.Now().Add(b.d.UploadTimeout)); err != nil {
		return err
	}
	defer func() {
		if err := b.d.BlobRefs.EndUpload(context.WithoutCancel(ctx), uploadID); err != nil {
			b.d.Log.WarnContext(ctx, "ending an upload failed; it ends when it expires", "upload", uploadID, "error", err.Error())
		}
	}()
	err := fn(ctx)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil {
		return domain.BadRequest(fmt.Sprintf("the upload took longer than %s (PROFILE_DATA_UPLOAD_TIMEOUT)", b.d.UploadTimeout))
	}
	return err
}

// putBlob stores content (in an upload) and records it at once as a
// candidate for collection: if the process dies before a unit refers to
// it, the collector removes it.
func (b *Blobs) putBlob(ctx context.Context, put func(context.Context) (ports.BlobInfo, error)) (ports.BlobInfo, error) {
	info, err := put(ctx)
	if err != nil {
		return ports.BlobInfo{}, err
	}
	if err := b.d.BlobRefs.Release(ctx, b.d.Clock.Now(), info.SHA256); err != nil {
		return ports.BlobInfo{}, err
	}
	return info, nil
}

// Bounds of an archive's contents besides its size. A profile's data are
// a few thousand files at most, while 200,000 entries let a 1.2 MB upload
// cost every launch half a minute and as many inodes: the bound is
// browserdata.MaxEntries (20,000), which a profile's data, caches left
// out, do not reach, and an archive past it is refused at the first entry
// over, the rest unread. Names are bounded by what a filesystem stores
// (browserdata.MaxNameLen).
const (
	dataMaxEntries = domaindata.MaxEntries
	dataMaxPathLen = domaindata.MaxNameLen
	// DataUnpackedFactor bounds the files an archive unpacks to, as a
	// multiple of the archive size limit: profile data compress a few
	// times, a gzip bomb by far more.
	DataUnpackedFactor = 4
)

// dataLimits are the Sanitize limits for the archive size limit.
func (b *Blobs) dataLimits() domaindata.Limits {
	return domaindata.Limits{
		MaxUnpacked: b.d.DataMax * DataUnpackedFactor,
		MaxEntries:  dataMaxEntries,
		MaxPathLen:  dataMaxPathLen,
	}
}

// PutArchive streams body through the sanitizer into the blob store (in
// an upload).
func (b *Blobs) PutArchive(ctx context.Context, body io.Reader) (ports.BlobInfo, error) {
	return b.putBlob(ctx, func(ctx context.Context) (ports.BlobInfo, error) { return b.storeArchive(ctx, body) })
}

func (b *Blobs) storeArchive(ctx context.Context, body io.Reader) (ports.BlobInfo, error) {
	limits := b.dataLimits()
	src := &limitedBody{r: body, left: b.d.DataMax}
	pr, pw := io.Pipe()
	sanitized := make(chan error, 1)
	go func() {
		_, err := domaindata.Sanitize(pw, src, limits)
		if errors.Is(err, errBodyTooLarge) {
			err = fmt.Errorf("%w: the archive exceeds %d bytes (PROFILE_DATA_MAX)", domaindata.ErrTooLarge, b.d.DataMax)
		}
		pw.CloseWithError(err)
		sanitized <- err
	}()
	// The cleaned archive is at most its files plus tar and gzip framing.
	info, err := b.d.Blobs.Put(ctx, pr, limits.MaxUnpacked+limits.MaxUnpacked/8+1<<20)
	pr.CloseWithError(errors.New("blob store stopped reading"))
	if serr := <-sanitized; serr != nil {
		return ports.BlobInfo{}, serr
	}
	if errors.Is(err, ports.ErrBlobTooLarge) {
		return ports.BlobInfo{}, fmt.Errorf("%w: %w", domaindata.ErrTooLarge, err)
	}
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("store browser data: %w", err)
	}
	return info, nil
}

var errBodyTooLarge = errors.New("request body over the limit")

// limitedBody fails with errBodyTooLarge once more than left bytes come.
type limitedBody struct {
	r    io.Reader
	left int64
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, errBodyTooLarge
	}
	if err != nil && err != io.EOF {
		return n, &domain.Error{Kind: domain.KindBadRequest, Message: "the request body could not be read to its end", Err: err}
	}
	return n, err
}

// storedCookie is how a cookie is kept in its blob: the same JSON shape
// whatever the transport, so that equal cookie lists share one blob.
type storedCookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain"`
	Path     string  `json:"path"`
	Expires  float64 `json:"expires"`
	HTTPOnly bool    `json:"httpOnly"`
	Secure   bool    `json:"secure"`
	SameSite string  `json:"sameSite"`
}

// maxCookiesBlob bounds a stored cookie list when it is read back: the most
// cookies of the largest size, with room for the JSON around them.
const maxCookiesBlob = domaindata.MaxCookies * 5 << 10

// PutCookies stores a cookie list as its blob (in an upload).
func (b *Blobs) PutCookies(ctx context.Context, cs []domaindata.Cookie) (ports.BlobInfo, error) {
	stored := make([]storedCookie, len(cs))
	for i, c := range cs {
		stored[i] = storedCookie{
			Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Expires: c.Expires,
			HTTPOnly: c.HTTPOnly, Secure: c.Secure, SameSite: string(c.SameSite),
		}
	}
	raw, err := json.Marshal(stored)
	if err != nil {
		return ports.BlobInfo{}, fmt.Errorf("encode cookies: %w", err)
	}
	return b.putBlob(ctx, func(ctx context.Context) (ports.BlobInfo, error) {
		return b.d.Blobs.Put(ctx, bytes.NewReader(raw), int64(len(raw)))
	})
}

// ReadCookies reads back a cookie list PutCookies stored.
func (b *Blobs) ReadCookies(ctx context.Context, c profile.Content) ([]domaindata.Cookie, error) {
	body, _, err := b.d.Blobs.Open(ctx, c.SHA256)
	if err != nil {
		return nil, fmt.Errorf("open cookies %s: %w", c.SHA256, err)
	}
	defer body.Close()
	var stored []storedCookie
	if err := json.NewDecoder(io.LimitReader(body, maxCookiesBlob)).Decode(&stored); err != nil {
		return nil, fmt.Errorf("read cookies %s: %w", c.SHA256, err)
	}
	out := make([]domaindata.Cookie, len(stored))
	for i, sc := range stored {
		out[i] = domaindata.Cookie{
			Name: sc.Name, Value: sc.Value, Domain: sc.Domain, Path: sc.Path, Expires: sc.Expires,
			HTTPOnly: sc.HTTPOnly, Secure: sc.Secure, SameSite: domaindata.SameSite(sc.SameSite),
		}
	}
	return out, nil
}
