package browserdata_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

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
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	a := testenv.TarGz(t, map[string]string{"Default/Preferences": `{"profile":{"name":"A"}}`})
	first, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(a)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Preferences": `{"profile":{"name":"B"}}`}))}); err != nil {
		t.Fatal(err)
	}
	// A is unreferenced now. An upload of A again starts and stalls.
	body := newGatedReader(a)
	done := make(chan error, 1)
	go func() {
		_, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: body})
		done <- err
	}()
	<-body.reached
	f.clock.Advance(browserdata.BlobGrace + time.Second)
	if n, err := f.blobs.Collect(ctx); err != nil || n != 0 {
		t.Fatalf("Collect during an upload = %d, %v; want 0, nil", n, err)
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
	f.clock.Advance(browserdata.BlobGrace + time.Second)
	if n, err := f.blobs.Collect(ctx); err != nil || n != 1 {
		t.Fatalf("Collect after the upload = %d, %v; want 1 (B), nil", n, err)
	}
}

// Data and its upload are for members of the profile's team.
func TestDataRolesAndTeams(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	archive := testenv.TarGz(t, map[string]string{"Default/Preferences": `{"profile":{"name":"x"}}`})
	if _, err := f.svc.PutData(ctx, viewer, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(archive)}); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer upload: %v, want forbidden", err)
	}
	if _, err := f.svc.PutData(ctx, outsider, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(archive)}); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("upload from another team: %v, want not found", err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Data(ctx, viewer, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer download: %v, want forbidden", err)
	}
	if _, err := f.svc.Data(ctx, outsider, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("download from another team: %v, want not found", err)
	}
}

// TestPutDataKeepsNoConfiguration: an upload is stored as the data a
// profile keeps, without an extension, Local State or a proxy preference.
func TestPutDataKeepsNoConfiguration(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	archive := testenv.TarGz(t, map[string]string{
		"Local State":             `{"browser":{"enabled_labs_experiments":["enable-quic@2"]}}`,
		"Default/Network/Cookies": "cookies",
		"Default/Preferences":     `{"extensions":{"settings":{"aapocclcgogkmnckokdopfmhonfmgoek":{}}},"proxy":{"mode":"direct"},"profile":{"name":"Shop"}}`,
		"Default/Extensions/aapocclcgogkmnckokdopfmhonfmgoek/1.0_0/manifest.json": `{"permissions":["proxy"]}`,
	})
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	dl, err := f.svc.Data(ctx, alice, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	body, err := io.ReadAll(dl.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := testenv.Untar(t, body)
	want := map[string]string{"Default/Network/Cookies": "cookies", "Default/Preferences": `{"profile":{"name":"Shop"}}`}
	if len(got) != len(want) || got["Default/Network/Cookies"] != want["Default/Network/Cookies"] || got["Default/Preferences"] != want["Default/Preferences"] {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// TestPutDataRefusesDataNoLaunchCouldUnpack: a file and a directory of one
// name is a validation error naming the data; the previous data stay.
func TestPutDataRefusesDataNoLaunchCouldUnpack(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	first, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "cookies"}))})
	if err != nil {
		t.Fatal(err)
	}
	clash := testenv.TarGz(t, map[string]string{"Default/x": "file", "Default/x/y": "file inside the file"})
	_, err = f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(clash)})
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) != 1 || de.Fields[0].Field != "data" ||
		de.Fields[0].Issue != `entry "Default/x/y": "Default/x" is a file in the archive and cannot hold it` {
		t.Fatalf("err = %#v, want a validation error of field data naming the clash", err)
	}
	if got := f.stored(t, p.ID).Data; got == nil || got.SHA256 != first.SHA256 {
		t.Fatalf("data after the refused upload: %+v, want %s", got, first.SHA256)
	}
}

// Deleting a profile's data leaves it without an archive; a viewer may
// not, and a running profile's data are its browser's.
func TestDeleteDataForgetsTheArchive(t *testing.T) {
	t.Parallel()
	f, p := newShop(t)
	ctx := context.Background()
	if _, err := f.svc.PutData(ctx, alice, p.ID, browserdata.PutDataInput{Body: bytes.NewReader(testenv.TarGz(t, map[string]string{"Default/Cookies": "c"}))}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteData(ctx, viewer, p.ID); !domain.IsKind(err, domain.KindForbidden) {
		t.Fatalf("viewer deletes data: %v, want forbidden", err)
	}
	if err := f.svc.DeleteData(ctx, outsider, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("another team deletes data: %v, want not found", err)
	}
	f.run(t, p.ID)
	if err := f.svc.DeleteData(ctx, alice, p.ID); !domain.IsKind(err, domain.KindConflict) {
		t.Fatalf("delete the data of a running profile: %v, want a conflict", err)
	}
	f.stop(t, p.ID)
	if err := f.svc.DeleteData(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.stored(t, p.ID); got.Data != nil {
		t.Fatalf("data after the delete: %+v, want none", got.Data)
	}
	if _, err := f.svc.Data(ctx, alice, p.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("download after the delete: %v, want not found", err)
	}
}
