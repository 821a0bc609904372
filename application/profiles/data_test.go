package profiles_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
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
	a := tarGz(t, "Default/Preferences", `{"profile":{"name":"A"}}`)
	first, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(a)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(tarGz(t, "Default/Preferences", `{"profile":{"name":"B"}}`))}); err != nil {
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
	archive := tarGz(t, "Default/Preferences", `{"profile":{"name":"x"}}`)
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

// onePool is a team's proxy pool of one proxy, last checked in Tokyo.
type onePool struct{ px proxy.Proxy }

func (o onePool) Lookup(_ context.Context, teamID, id string) (proxy.Proxy, error) {
	if teamID != o.px.TeamID || id != o.px.ID {
		return proxy.Proxy{}, domain.NotFound("proxy")
	}
	return o.px, nil
}

func (o onePool) Prepare(context.Context, team.Actor, proxy.Input) (proxy.Proxy, error) {
	return proxy.Proxy{}, domain.Invalid("proxy", "not in this test")
}

func (o onePool) Store(context.Context, proxy.Proxy) error { return nil }

func (o onePool) Target(ctx context.Context, teamID, id string) (proxy.Proxy, ports.ProxyTarget, error) {
	px, err := o.Lookup(ctx, teamID, id)
	return px, ports.ProxyTarget{Type: "socks5", Host: "proxy.example.test", Port: 1080, Username: "u", Password: "p"}, err
}

func TestLaunchResolvesAutoFromTheProxyAndHandsOverDataAndCookies(t *testing.T) {
	f := newFixture(t)
	f.deps.Proxies = onePool{px: proxy.Proxy{ID: "prx_1", TeamID: "team_1", Type: proxy.TypeSOCKS5, Host: "proxy.example.test", Port: 1080,
		LastCheck: &proxy.Check{OK: true, Timezone: "Asia/Tokyo", Country: "JP"}}}
	f.build()
	ctx := context.Background()
	auto := profile.Auto
	p, err := f.svc.Create(ctx, alice, profile.Settings{Name: "Auto", TemplateID: "tpl_chrome_win_us", ProxyID: "prx_1",
		Fingerprint: profile.FingerprintPatch{Timezone: &auto, Locale: &auto}})
	if err != nil {
		t.Fatal(err)
	}
	archive := tarGz(t, "Default/Preferences", `{"profile":{"name":"A"}}`)
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.PutCookies(ctx, alice, p.ID, []browserdata.Cookie{{Name: "sid", Value: "1", Domain: "shop.example", Path: "/", Expires: -1, SameSite: browserdata.SameSiteLax}}); err != nil {
		t.Fatal(err)
	}
	var spec ports.LaunchSpec
	var data []byte
	f.rt.onStart = func(s ports.LaunchSpec) {
		spec = s
		data, _ = io.ReadAll(s.Data)
	}
	if _, err := f.svc.Launch(ctx, alice, p.ID, profiles.LaunchInput{}); err != nil {
		t.Fatal(err)
	}
	if fp := spec.Profile.Fingerprint; fp.Timezone != "Asia/Tokyo" || fp.Locale != "ja-JP" {
		t.Fatalf("launched with timezone %q, locale %q; want the proxy's Asia/Tokyo, ja-JP", fp.Timezone, fp.Locale)
	}
	if spec.Proxy == nil || spec.Proxy.Password != "p" || spec.Proxy.Host != "proxy.example.test" {
		t.Fatalf("launched with proxy %+v", spec.Proxy)
	}
	if len(spec.Cookies) != 1 || spec.Cookies[0].Name != "sid" {
		t.Fatalf("launched with cookies %+v", spec.Cookies)
	}
	files := untarNames(t, data)
	if len(files) != 1 || files[0] != "Default/Preferences" {
		t.Fatalf("launched with data holding %v", files)
	}
	// The stored fingerprint keeps "auto": the next launch follows the
	// proxy again.
	if fp := f.stored(t, p.ID).Fingerprint; fp.Timezone != profile.Auto || fp.Locale != profile.Auto {
		t.Fatalf("stored fingerprint %+v", fp)
	}
}

func untarNames(t *testing.T, archive []byte) []string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("data handed to the browser: %v", err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			names = append(names, hdr.Name)
		}
	}
}

// tarGzEntries packs files (name, content) in the order given.
func tarGzEntries(t *testing.T, files ...[2]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f[0], Mode: 0o600, Size: int64(len(f[1])), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// untarFiles reads the regular files of a tar.gz: name to content.
func untarFiles(t *testing.T, archive io.Reader) map[string]string {
	t.Helper()
	zr, err := gzip.NewReader(archive)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[hdr.Name] = string(b)
	}
}

// TestPutDataKeepsNoConfiguration: an upload is stored as the data a
// profile keeps, without an extension, Local State or a proxy preference.
func TestPutDataKeepsNoConfiguration(t *testing.T) {
	f, p := newShop(t)
	ctx := context.Background()
	archive := tarGzEntries(t,
		[2]string{"Local State", `{"browser":{"enabled_labs_experiments":["enable-quic@2"]}}`},
		[2]string{"Default/Network/Cookies", "cookies"},
		[2]string{"Default/Preferences", `{"extensions":{"settings":{"aapocclcgogkmnckokdopfmhonfmgoek":{}}},"proxy":{"mode":"direct"},"profile":{"name":"Shop"}}`},
		[2]string{"Default/Extensions/aapocclcgogkmnckokdopfmhonfmgoek/1.0_0/manifest.json", `{"permissions":["proxy"]}`},
	)
	if _, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	dl, err := f.svc.Data(ctx, alice, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Body.Close()
	got := untarFiles(t, dl.Body)
	want := map[string]string{"Default/Network/Cookies": "cookies", "Default/Preferences": `{"profile":{"name":"Shop"}}`}
	if len(got) != len(want) || got["Default/Network/Cookies"] != want["Default/Network/Cookies"] || got["Default/Preferences"] != want["Default/Preferences"] {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// TestPutDataRefusesDataNoLaunchCouldUnpack: a file and a directory of one
// name is a validation error naming the data; the previous data stay.
func TestPutDataRefusesDataNoLaunchCouldUnpack(t *testing.T) {
	f, p := newShop(t)
	ctx := context.Background()
	first, err := f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(tarGz(t, "Default/Cookies", "cookies"))})
	if err != nil {
		t.Fatal(err)
	}
	clash := tarGzEntries(t, [2]string{"Default/x", "file"}, [2]string{"Default/x/y", "file inside the file"})
	_, err = f.svc.PutData(ctx, alice, p.ID, profiles.PutDataInput{Body: bytes.NewReader(clash)})
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || len(de.Fields) != 1 || de.Fields[0].Field != "data" ||
		de.Fields[0].Issue != `entry "Default/x/y": "Default/x" is a file in the archive and cannot hold it` {
		t.Fatalf("err = %#v, want a validation error of field data naming the clash", err)
	}
	if got := f.stored(t, p.ID).Data; got == nil || got.SHA256 != first.SHA256 {
		t.Fatalf("data after the refused upload: %+v, want %s", got, first.SHA256)
	}
}
