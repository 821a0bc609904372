package profiles_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/profiles"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports/profilestore"
)

// renamedAfterRead commits another writer's rename of p ("Rival"), and
// serves the service's first staleReads reads of p from the copy taken
// before: what a reader sees when it loses the race between its read and
// its write. It returns the reads, to count them.
func (f *fixture) renamedAfterRead(t *testing.T, p profile.Profile, staleReads int) *byIDHook {
	t.Helper()
	name := "Rival"
	next, err := p.Apply(profile.Patch{Name: &name}, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.store.Profiles().Update(ctx, next, p.Version); err != nil {
		t.Fatal(err)
	}
	inner := f.deps.Profiles
	reads := &byIDHook{Profiles: inner, fn: func(ctx context.Context, n int, teamID, id string) (profile.Profile, error) {
		if n <= staleReads {
			return p, nil
		}
		return inner.ByID(ctx, teamID, id)
	}}
	f.useProfiles(reads)
	return reads
}

func TestUpdateRetriesOnTopOfAConcurrentWriter(t *testing.T) {
	f, p := newShop(t)
	reads := f.renamedAfterRead(t, p, 1)
	notes := "checked"

	got, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Notes: &notes}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The rival's name survives; the patch lands on its version.
	if got.Name != "Rival" || got.Notes != "checked" || got.Version != 3 {
		t.Fatalf("updated %+v", got)
	}
	if s := f.stored(t, p.ID); s.Name != "Rival" || s.Notes != "checked" || s.Version != 3 {
		t.Fatalf("stored %+v", s)
	}
	if n := reads.calls.Load(); n != 2 {
		t.Fatalf("%d reads, want 2", n)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileUpdated), outboxEvent{Type: event.ProfileUpdated, Profile: "prf_001"})
}

func TestUpdateGivesUpAfterTheAttempts(t *testing.T) {
	f, p := newShop(t)
	reads := f.renamedAfterRead(t, p, 1000)
	notes := "checked"

	_, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Notes: &notes}, nil)
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "the profile kept changing while this update was applied; try again" {
		t.Fatalf("error %q", err)
	}
	if n := reads.calls.Load(); n != 3 {
		t.Fatalf("%d attempts, want the policy's default of 3", n)
	}
	if s := f.stored(t, p.ID); s.Notes != "" || s.Version != 2 {
		t.Fatalf("stored %+v", s)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileUpdated))
}

func TestUpdateWithIfMatch(t *testing.T) {
	f, p := newShop(t)
	notes := "checked"
	seven := 7

	_, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Notes: &notes}, &seven)
	apptest.WantKind(t, err, domain.KindPreconditionFailed)
	if err.Error() != "If-Match does not match the profile's version 1; read it again and retry" {
		t.Fatalf("error %q", err)
	}

	// If-Match matched what was read, but a writer came in between: no
	// retry, the client decides.
	reads := f.renamedAfterRead(t, p, 1)
	one := 1
	_, err = f.svc.Update(ctx, alice, p.ID, profile.Patch{Notes: &notes}, &one)
	apptest.WantKind(t, err, domain.KindPreconditionFailed)
	if n := reads.calls.Load(); n != 1 {
		t.Fatalf("%d attempts with If-Match, want 1", n)
	}

	two := 2
	got, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Notes: &notes}, &two)
	if err != nil || got.Version != 3 || got.Notes != "checked" {
		t.Fatalf("update with the current version: %+v %v", got, err)
	}
}

func TestUpdateRefusalsAndEmptyPatch(t *testing.T) {
	f, p := newShop(t)
	blank, proxy, none := " ", "prx_1", ""

	got, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{}, nil)
	if err != nil || got.Version != 1 || got.Name != "Shop" {
		t.Fatalf("empty patch: %+v %v", got, err)
	}
	_, err = f.svc.Update(ctx, viewer, p.ID, profile.Patch{Name: &blank}, nil)
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Update(ctx, alice, p.ID, profile.Patch{Name: &blank}, nil)
	apptest.WantKind(t, err, domain.KindValidation)
	_, err = f.svc.Update(ctx, alice, p.ID, profile.Patch{ProxyID: &proxy}, nil)
	apptest.WantKind(t, err, domain.KindValidation)
	if err.Error() != "validation failed; proxy.id: must name a stored proxy of this team" {
		t.Fatalf("error %q", err)
	}
	_, err = f.svc.Update(ctx, outsider, p.ID, profile.Patch{Notes: &none}, nil)
	apptest.WantKind(t, err, domain.KindNotFound)
	// Removing a proxy the profile does not have needs no check.
	if got, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{ProxyID: &none}, nil); err != nil || got.Version != 2 {
		t.Fatalf("remove proxy: %+v %v", got, err)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileUpdated), outboxEvent{Type: event.ProfileUpdated, Profile: "prf_001"})
}

func TestDeleteOfARunningProfileNamesTheHolder(t *testing.T) {
	f, p := launchedShop(t)

	err := f.svc.Delete(ctx, admin, p.ID)
	apptest.WantKind(t, err, domain.KindConflict)
	var de *domain.Error
	if !errors.As(err, &de) || de.Message != "profile is running: session ses_001 launched by alice@example.com (usr_alice), lease until 2030-01-01T12:10:00Z" {
		t.Fatalf("error %v", err)
	}
	if f.stored(t, p.ID).ID != p.ID {
		t.Fatal("running profile deleted")
	}

	// Without the users module the holder is named by id.
	f.deps.Users = apptest.UnreadableUsers{Err: errors.New("users: connection reset")}
	f.build()
	err = f.svc.Delete(ctx, admin, p.ID)
	if !errors.As(err, &de) || de.Message != "profile is running: session ses_001 launched by usr_alice, lease until 2030-01-01T12:10:00Z" {
		t.Fatalf("error %v", err)
	}
	wantEvents(t, f.eventsOf(t, event.ProfileDeleted))
}

func TestDeleteOfAnIdleProfile(t *testing.T) {
	f, p := newShop(t)

	apptest.WantKind(t, f.svc.Delete(ctx, alice, p.ID), domain.KindForbidden)
	if err := f.svc.Delete(ctx, admin, p.ID); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Get(ctx, alice, p.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
	wantEvents(t, f.eventsOf(t, event.ProfileDeleted), outboxEvent{Type: event.ProfileDeleted, Profile: "prf_001"})
	apptest.WantKind(t, f.svc.Delete(ctx, admin, p.ID), domain.KindNotFound)
}

func TestCreate(t *testing.T) {
	f := newFixture(t)
	ok := profile.Settings{Name: "Shop", TemplateID: "tpl_chrome_win_us", Tags: []string{"eu"}}

	_, err := f.svc.Create(ctx, viewer, ok)
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Create(ctx, alice, profile.Settings{Name: "Shop", TemplateID: "tpl_nope"})
	apptest.WantKind(t, err, domain.KindValidation)
	withProxy := ok
	withProxy.ProxyID = "prx_1"
	_, err = f.svc.Create(ctx, alice, withProxy)
	apptest.WantKind(t, err, domain.KindValidation)

	// The profile and its event are written in one unit: a refused write
	// leaves neither.
	f.deps.Profiles = &refusingCreates{Profiles: f.store.Profiles(), err: errors.New("db: disk full")}
	f.build()
	if _, err := f.svc.Create(ctx, alice, ok); err == nil || err.Error() != "db: disk full" {
		t.Fatalf("create with a failing store: %v", err)
	}
	page, err := f.svc.List(ctx, alice, profiles.ListInput{Limit: 10})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("profiles after a failed create: %+v %v", page.Items, err)
	}
	if evs, err := f.store.Outbox().ListAfter(ctx, "", 10); err != nil || len(evs) != 0 {
		t.Fatalf("events after a failed create: %+v %v", evs, err)
	}

	f.deps.Profiles = f.store.Profiles()
	f.build()
	p, err := f.svc.Create(ctx, alice, ok)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "Shop" || p.TeamID != "team_1" || p.CreatedBy != "usr_alice" || p.Version != 1 || !p.CreatedAt.Equal(t0) {
		t.Fatalf("profile %+v", p)
	}
	evs, err := f.store.Outbox().ListAfter(ctx, "", 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("events %+v %v", evs, err)
	}
	want := `{"profile":{"id":"prf_004","name":"Shop","browser":"chromium","fingerprint_template":"Chrome on Windows (US)","created_at":"2030-01-01T12:00:00Z"}}`
	if string(evs[0].Data) != want || evs[0].Type != event.ProfileCreated || evs[0].TeamID != "team_1" {
		t.Fatalf("event %s %s", evs[0].Type, evs[0].Data)
	}
}

func TestTemplates(t *testing.T) {
	f := newFixture(t)
	nobody := team.Actor{UserID: "usr_x", TeamID: "team_1"}

	list, err := f.svc.Templates(viewer)
	if err != nil || len(list) == 0 || list[0].ID != "tpl_chrome_win_us" {
		t.Fatalf("templates %+v %v", list, err)
	}
	_, err = f.svc.Templates(nobody)
	apptest.WantKind(t, err, domain.KindForbidden)
	tpl, err := f.svc.Template(viewer, "tpl_chrome_mac_fr")
	if err != nil || tpl.Name != "Chrome on macOS (France)" || tpl.Device.WebGL.Vendor != "Google Inc. (Apple)" || tpl.Device.Locale != "fr-FR" {
		t.Fatalf("template %+v %v", tpl, err)
	}
	// Without an engine of its own, the devices name the default version.
	if ua := tpl.Device.UserAgent; !strings.Contains(ua, " Chrome/156.0.0.0 ") {
		t.Fatalf("user agent %q", ua)
	}
	_, err = f.svc.Template(viewer, "tpl_nope")
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.Template(nobody, "tpl_chrome_mac_fr")
	apptest.WantKind(t, err, domain.KindForbidden)
}

func TestGetAndList(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{"Alpha shop", "Beta", "Gamma shop"} {
		f.create(t, name)
	}
	f.launch(t, alice, "prf_002")

	got, err := f.svc.Get(ctx, viewer, "prf_001")
	if err != nil || got.Name != "Alpha shop" {
		t.Fatalf("get %+v %v", got, err)
	}
	_, err = f.svc.Get(ctx, team.Actor{TeamID: "team_1"}, "prf_001")
	apptest.WantKind(t, err, domain.KindForbidden)

	ids := func(ps []profile.Profile) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.ID)
		}
		return out
	}
	page, err := f.svc.List(ctx, viewer, profiles.ListInput{Limit: 2})
	if err != nil || !slices.Equal(ids(page.Items), []string{"prf_003", "prf_002"}) || page.NextCursor != "prf_002" {
		t.Fatalf("first page %v %q %v", ids(page.Items), page.NextCursor, err)
	}
	page, err = f.svc.List(ctx, viewer, profiles.ListInput{Limit: 2, Cursor: page.NextCursor})
	if err != nil || !slices.Equal(ids(page.Items), []string{"prf_001"}) || page.NextCursor != "" {
		t.Fatalf("second page %v %q %v", ids(page.Items), page.NextCursor, err)
	}
	page, err = f.svc.List(ctx, viewer, profiles.ListInput{Limit: 10, Status: "idle", Query: "SHOP"})
	if err != nil || !slices.Equal(ids(page.Items), []string{"prf_003", "prf_001"}) {
		t.Fatalf("idle shops %v %v", ids(page.Items), err)
	}
	page, err = f.svc.List(ctx, viewer, profiles.ListInput{Limit: 10, Status: "running"})
	if err != nil || !slices.Equal(ids(page.Items), []string{"prf_002"}) {
		t.Fatalf("running %v %v", ids(page.Items), err)
	}

	for _, in := range []profiles.ListInput{
		{Limit: 10, Status: "busy"},
		{Limit: 10, Cursor: "usr_001"},
		{Limit: 10, Query: strings.Repeat("x", 801)},
		{Limit: 10, Tag: strings.Repeat("x", 201)},
	} {
		_, err := f.svc.List(ctx, viewer, in)
		apptest.WantKind(t, err, domain.KindBadRequest)
	}
	_, err = f.svc.List(ctx, team.Actor{TeamID: "team_1"}, profiles.ListInput{Limit: 10})
	apptest.WantKind(t, err, domain.KindForbidden)
}

// refusingCreates refuses every create with err.
type refusingCreates struct {
	profilestore.Profiles
	err error
}

func (r *refusingCreates) Create(context.Context, profile.Profile) (int, error) { return 0, r.err }

// TestDevicesFollowTheEngine: the engine the runtime runs names the version
// of templates' and new profiles' user agents; each template shows the
// same device on every call, and each new profile is a device of its own.
func TestDevicesFollowTheEngine(t *testing.T) {
	f := newFixture(t)
	f.deps.EngineVersion = "158.0.8200.7"
	f.build()
	list, err := f.svc.Templates(viewer)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := f.svc.Templates(viewer)
	for i, tpl := range list {
		if !strings.Contains(tpl.Device.UserAgent, " Chrome/158.0.0.0 ") || tpl.Device.Validate() != nil {
			t.Errorf("template %s: %+v", tpl.ID, tpl.Device)
		}
		if !reflect.DeepEqual(tpl.Device, again[i].Device) {
			t.Errorf("template %s shows another device on the next call", tpl.ID)
		}
	}
	a, b := f.create(t, "A"), f.create(t, "B")
	for _, p := range []profile.Profile{a, b} {
		if !strings.Contains(p.Fingerprint.UserAgent, " Chrome/158.0.0.0 ") || p.Fingerprint.Validate() != nil || p.Fingerprint.Platform != "Win32" {
			t.Fatalf("profile %s: %+v", p.Name, p.Fingerprint)
		}
		if !reflect.DeepEqual(f.stored(t, p.ID).Fingerprint, p.Fingerprint) {
			t.Fatalf("profile %s: stored another device than it answered", p.Name)
		}
	}
	if a.Fingerprint.NoiseSeed == b.Fingerprint.NoiseSeed || reflect.DeepEqual(a.Fingerprint, b.Fingerprint) {
		t.Fatal("two profiles of one template are one device")
	}
}

// TestUpdateOfTheTemplateIsANewDevice: a new template gives a device of its
// kind with the patch's fields on top; a nested field alone changes that
// field alone.
func TestUpdateOfTheTemplateIsANewDevice(t *testing.T) {
	f, p := newShop(t)
	cores := 6
	got, err := f.svc.Update(ctx, alice, p.ID, profile.Patch{Fingerprint: &profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{HardwareConcurrency: &cores}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := p.Fingerprint
	want.Navigator.HardwareConcurrency = 6
	if !reflect.DeepEqual(got.Fingerprint, want) || !reflect.DeepEqual(f.stored(t, p.ID).Fingerprint, want) {
		t.Fatalf("got %+v\nwant %+v", got.Fingerprint, want)
	}
	mac := "tpl_chrome_mac_us"
	got, err = f.svc.Update(ctx, alice, p.ID, profile.Patch{TemplateID: &mac, Fingerprint: &profile.FingerprintPatch{Navigator: &profile.NavigatorPatch{HardwareConcurrency: &cores}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fp := got.Fingerprint
	if fp.Platform != "MacIntel" || fp.WebGL.Vendor != "Google Inc. (Apple)" || fp.Navigator.HardwareConcurrency != 6 || fp.NoiseSeed == p.Fingerprint.NoiseSeed {
		t.Fatalf("not a new Mac: %+v", fp)
	}
}
