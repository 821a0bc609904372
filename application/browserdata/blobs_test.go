package browserdata_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/domain"
	domaindata "github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// If-Match names the data the upload replaces: "*" any data, else their
// sha256; a profile without data matches neither.
func TestPutDataIfMatch(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	put := func(ifMatch string, content string) error {
		_, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": content})), IfMatch: &ifMatch})
		return err
	}
	err := put("*", "a")
	if !domain.IsKind(err, domain.KindPreconditionFailed) || !strings.Contains(err.Error(), "the profile has no browser data") {
		t.Fatalf(`If-Match "*" without data: %v, want 412 saying there are none`, err)
	}
	first, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "a"}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := put("*", "b"); err != nil {
		t.Fatalf(`If-Match "*" with data: %v`, err)
	}
	err = put(first.SHA256, "c")
	if !domain.IsKind(err, domain.KindPreconditionFailed) || strings.Contains(err.Error(), first.SHA256) {
		t.Fatalf("If-Match of the replaced data: %v, want 412 naming the current data", err)
	}
	current := f.stored(t, p.ID).Data.SHA256
	if err := put(current, "c"); err != nil {
		t.Fatalf("If-Match of the current data: %v", err)
	}
	if v := f.stored(t, p.ID).Version; v != 4 {
		t.Fatalf("version after three uploads: %d, want 4", v)
	}
}

// An archive over the limit, as sent, is ErrTooLarge, and the limit is
// the one configured; the previous data stay.
func TestPutDataOverTheLimit(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	f.blobDeps.DataMax = 200
	f.build()
	ctx := context.Background()
	if got := f.svc.DataMax(); got != 200 {
		t.Fatalf("DataMax = %d, want 200", got)
	}
	noise := make([]byte, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rng.Uint32())
	}
	big := testenv.TarGz(t, map[string]string{"Default/Local Storage/big": string(noise)})
	if len(big) <= 200 {
		t.Fatalf("the test archive is only %d bytes", len(big))
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(big)}); !errors.Is(err, domaindata.ErrTooLarge) {
		t.Fatalf("archive of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	if got := f.stored(t, p.ID); got.Data != nil || got.Version != 1 {
		t.Fatalf("after the refused upload: data %+v, version %d; want none, 1", got.Data, got.Version)
	}
	if got := browserdata.NewBlobs(browserdata.BlobsDeps{}).DataMax(); got != 512<<20 {
		t.Fatalf("default DataMax = %d, want 512 MiB", got)
	}
}

// brokenBody fails after its first bytes, as a connection that drops.
type brokenBody struct{ sent bool }

func (b *brokenBody) Read(p []byte) (int, error) {
	if b.sent {
		return 0, errors.New("connection reset by peer")
	}
	b.sent = true
	return copy(p, []byte{0x1f, 0x8b}), nil
}

// A body that cannot be read to its end is the client's fault (400).
func TestPutDataOfABrokenBody(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	_, err := f.svc.PutData(context.Background(), alice, p.ID, browserdata.PutDataInput{Body: &brokenBody{}})
	if !domain.IsKind(err, domain.KindBadRequest) {
		t.Fatalf("broken body: %v, want a bad request", err)
	}
	if got := f.stored(t, p.ID).Data; got != nil {
		t.Fatalf("data after a broken upload: %+v, want none", got)
	}
}

// failingRefs makes single calls of the blob bookkeeping fail.
type failingRefs struct {
	browserdata.BlobRefs
	begin, end, inProgress error
}

func (r failingRefs) BeginUpload(ctx context.Context, id string, expiresAt time.Time) error {
	if r.begin != nil {
		return r.begin
	}
	return r.BlobRefs.BeginUpload(ctx, id, expiresAt)
}

func (r failingRefs) EndUpload(ctx context.Context, id string) error {
	if r.end != nil {
		return r.end
	}
	return r.BlobRefs.EndUpload(ctx, id)
}

func (r failingRefs) UploadsInProgress(ctx context.Context, now time.Time) (bool, error) {
	if r.inProgress != nil {
		return false, r.inProgress
	}
	return r.BlobRefs.UploadsInProgress(ctx, now)
}

// An upload that cannot be registered stores nothing; one that cannot be
// ended is stored, and ends when it expires (a warning says so).
func TestUploadRegistration(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	refs := f.blobDeps.BlobRefs
	down := errors.New("store down")

	f.blobDeps.BlobRefs = failingRefs{BlobRefs: refs, begin: down}
	f.build()
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "a"}))}); !errors.Is(err, down) {
		t.Fatalf("upload that cannot begin: %v, want %v", err, down)
	}
	if got := f.stored(t, p.ID).Data; got != nil {
		t.Fatalf("data after an upload that could not begin: %+v", got)
	}

	f.blobDeps.BlobRefs = failingRefs{BlobRefs: refs, end: down}
	f.build()
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "a"}))}); err != nil {
		t.Fatalf("upload that cannot end: %v", err)
	}
	if got := f.stored(t, p.ID).Data; got == nil {
		t.Fatal("no data after an upload that could not end")
	}
	if !f.logs.Has("WARN ending an upload failed; it ends when it expires") {
		t.Fatalf("logs %q, want the warning", f.logs.Lines())
	}
}

// The collector stops at a store that fails, deleting nothing.
func TestCollectWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "a"}))}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteData(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(browserdata.BlobGrace + time.Second)
	down := errors.New("store down")
	refs := f.blobDeps.BlobRefs
	f.blobDeps.BlobRefs = failingRefs{BlobRefs: refs, inProgress: down}
	f.build()
	if n, err := f.blobs.Collect(ctx); !errors.Is(err, down) || n != 0 {
		t.Fatalf("Collect with the store down: %d, %v; want 0, %v", n, err, down)
	}
	f.blobDeps.BlobRefs = refs
	f.build()
	if n, err := f.blobs.Collect(ctx); err != nil || n != 1 {
		t.Fatalf("Collect: %d, %v; want 1 (the deleted archive), nil", n, err)
	}
}
