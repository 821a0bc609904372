package profiles_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"testing"

	appbrowserdata "github.com/profilesvc/profilesvc/application/browserdata"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/proxy"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

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
	archive := testenv.TarGz(t, map[string]string{"Default/Preferences": `{"profile":{"name":"A"}}`})
	if _, err := f.data.PutData(ctx, alice, p.ID, appbrowserdata.PutDataInput{Body: bytes.NewReader(archive)}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.data.PutCookies(ctx, alice, p.ID, []browserdata.Cookie{{Name: "sid", Value: "1", Domain: "shop.example", Path: "/", Expires: -1, SameSite: browserdata.SameSiteLax}}); err != nil {
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
