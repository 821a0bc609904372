package profiles_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
)

// tarGz packs one file.
func tarGz(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o600, Size: int64(len(content)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// gatedReader gives its first half, then waits for the gate before the
// rest, and says when it has reached the gate.
type gatedReader struct {
	first, rest io.Reader
	reached     chan struct{}
	gate        chan struct{}
	waited      bool
}

func newGatedReader(b []byte) *gatedReader {
	half := len(b) / 2
	return &gatedReader{first: bytes.NewReader(b[:half]), rest: bytes.NewReader(b[half:]), reached: make(chan struct{}), gate: make(chan struct{})}
}

func (g *gatedReader) Read(p []byte) (int, error) {
	if n, err := g.first.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	if !g.waited {
		g.waited = true
		close(g.reached)
		<-g.gate
	}
	return g.rest.Read(p)
}

// TestCollectorWaitsForUploadsInProgress: content nothing refers to is
// not deleted while an upload is in progress, since that upload may be of
// the same content and end up referring to it.
func TestCollectorWaitsForUploadsInProgress(t *testing.T) {
	f, p := newShop(t)
	ctx := context.Background()
	a := tarGz(t, "Default/Preferences", "state A")
	first, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(a)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(tarGz(t, "Default/Preferences", "state B"))}); err != nil {
		t.Fatal(err)
	}
	// A is unreferenced now. An upload of A again starts and stalls.
	body := newGatedReader(a)
	done := make(chan error, 1)
	go func() {
		_, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: body})
		done <- err
	}()
	<-body.reached
	f.clock.Advance(profiles.BlobGrace + time.Second)
	if n, err := f.svc.CollectBlobs(ctx); err != nil || n != 0 {
		t.Fatalf("CollectBlobs during an upload = %d, %v; want 0, nil", n, err)
	}
	close(body.gate)
	if err := <-done; err != nil {
		t.Fatalf("upload of A again: %v", err)
	}
	dl, err := f.svc.Data(ctx, alice, p.ID)
	if err != nil {
		t.Fatalf("download after the upload: %v", err)
	}
	defer dl.Body.Close()
	if dl.Data.SHA256 != first.SHA256 {
		t.Fatalf("data %s, want A's %s", dl.Data.SHA256, first.SHA256)
	}
	if _, err := io.Copy(io.Discard, dl.Body); err != nil {
		t.Fatal(err)
	}

	// With no upload in progress, B (unreferenced) is collected.
	f.clock.Advance(profiles.BlobGrace + time.Second)
	if n, err := f.svc.CollectBlobs(ctx); err != nil || n != 1 {
		t.Fatalf("CollectBlobs after the upload = %d, %v; want 1 (B), nil", n, err)
	}
}

func TestDataRolesAndTeams(t *testing.T) {
	f, p := newShop(t)
	ctx := context.Background()
	archive := tarGz(t, "Default/Preferences", "x")
	if _, err := f.svc.PutData(ctx, viewer, p.ID, profiles.PutDataInput{Body: bytes.NewReader(archive)}); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer upload: %v, want forbidden", err)
	}
	if _, err := f.svc.PutData(ctx, outsider, p.ID, profiles.PutDataInput{Body: bytes.NewReader(archive)}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("upload from another team: %v, want not found", err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Data(ctx, viewer, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer download: %v, want forbidden", err)
	}
	if _, err := f.svc.Data(ctx, outsider, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("download from another team: %v, want not found", err)
	}
	sn, err := f.svc.CreateSnapshot(ctx, bob, p.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Snapshots(ctx, viewer, p.ID, profiles.SnapshotListInput{Limit: 10}); err != nil {
		t.Fatalf("viewer list: %v", err)
	}
	if _, err := f.svc.Snapshot(ctx, outsider, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("snapshot from another team: %v, want not found", err)
	}
	if err := f.svc.DeleteSnapshot(ctx, bob, p.ID, sn.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("member deletes a snapshot: %v, want forbidden", err)
	}
	if _, err := f.svc.Restore(ctx, outsider, p.ID, sn.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("restore from another team: %v, want not found", err)
	}
	if err := f.svc.DeleteSnapshot(ctx, admin, p.ID, sn.ID); err != nil {
		t.Fatalf("admin deletes a snapshot: %v", err)
	}
}
