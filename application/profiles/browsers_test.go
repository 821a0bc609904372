package profiles_test

import (
	"slices"
	"testing"

	"github.com/profilesvc/profilesvc/domain/browserdata"
	"github.com/profilesvc/profilesvc/domain/event"
)

// wantCookies checks the cookies the API shows for profile id.
func (f *fixture) wantCookies(t *testing.T, id string, want ...browserdata.Cookie) {
	t.Helper()
	got, err := f.data.Cookies(ctx, alice, id)
	if err != nil {
		t.Fatalf("cookies of %s: %v", id, err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("cookies of %s\n got %+v\nwant %+v", id, got, want)
	}
}

func TestCheckpointStoresARunningSessionsCookiesWithoutANewVersion(t *testing.T) {
	f, p := newShop(t)
	f.rt.cdp = true
	f.launch(t, alice, p.ID)
	version := f.stored(t, p.ID).Version

	// Before the browser holds any cookie, a checkpoint stores nothing.
	f.rt.setCookies("ses_001")
	if err := f.svc.CheckpointCookies(ctx); err != nil {
		t.Fatal(err)
	}
	f.wantCookies(t, p.ID)

	first := browserdata.Cookie{Name: "sid", Value: "one", Domain: "shop.example.com", Path: "/", Expires: 4102444800, HTTPOnly: true, Secure: true, SameSite: browserdata.SameSiteLax}
	f.rt.setCookies("ses_001", first)
	if err := f.svc.CheckpointCookies(ctx); err != nil {
		t.Fatal(err)
	}
	f.wantCookies(t, p.ID, first)

	// The browser changes its cookies; the next checkpoint replaces them.
	second := first
	second.Value = "two"
	theme := browserdata.Cookie{Name: "theme", Value: "dark", Domain: "shop.example.com", Path: "/", Expires: -1}
	f.rt.setCookies("ses_001", second, theme)
	if err := f.svc.CheckpointCookies(ctx); err != nil {
		t.Fatal(err)
	}
	f.wantCookies(t, p.ID, second, theme)

	// The session runs on, under the same version: its browser owns the
	// profile's data, so no client edit can have been overtaken, and no
	// event says the profile changed.
	stored := f.stored(t, p.ID)
	if stored.Version != version {
		t.Fatalf("version %d after checkpoints, want %d", stored.Version, version)
	}
	f.wantSession(t, p.ID, "ses_001")
	wantEvents(t, f.events(t),
		outboxEvent{Type: event.ProfileCreated, Profile: "prf_001"},
		outboxEvent{Type: event.ProfileLaunched, Profile: "prf_001", Session: "ses_001", By: "usr_alice"},
	)
	wantCalls(t, f.rt, "start prf_001 ses_001")

	// A browser that leaves nothing when it stops keeps the last
	// checkpoint as the profile's cookies.
	if _, err := f.svc.Release(ctx, alice, p.ID); err != nil {
		t.Fatal(err)
	}
	f.wantCookies(t, p.ID, second, theme)
}

func TestCheckpointLeavesSessionsNotRunHere(t *testing.T) {
	f, p := newShop(t)
	// A lease-only session (no CDP) has no browser here.
	f.launch(t, alice, p.ID)
	f.rt.setCookies("ses_001", browserdata.Cookie{Name: "sid", Value: "one", Domain: "shop.example.com", Path: "/", Expires: -1})
	if err := f.svc.CheckpointCookies(ctx); err != nil {
		t.Fatal(err)
	}
	f.wantCookies(t, p.ID)

	// A browser the runtime no longer knows is skipped without an error.
	other := f.create(t, "Other")
	f.rt.cdp = true
	f.launch(t, alice, other.ID)
	if err := f.svc.CheckpointCookies(ctx); err != nil {
		t.Fatalf("checkpoint of a browser the runtime does not run: %v", err)
	}
	f.wantCookies(t, other.ID)
}
