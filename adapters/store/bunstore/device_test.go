package bunstore_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/profilesvc/profilesvc/adapters/store/bunstore"
	"github.com/profilesvc/profilesvc/domain/profile"
	"github.com/profilesvc/profilesvc/domain/snapshot"
	"github.com/profilesvc/profilesvc/ports/profilestore"
	"github.com/profilesvc/profilesvc/tests/testenv"
)

// Rows written before the device column existed (an empty string there)
// read as complete devices of their kind, the same on every read, from
// every instance and through each of PostgreSQL's decoders; a profile's
// snapshots show its device; the next write stores it.
func TestRowsWithoutADeviceReadAsAStableDevice(t *testing.T) {
	for _, dialect := range []struct {
		name string
		url  func(testing.TB) string
	}{{"sqlite", testenv.SQLiteURL}, {"postgres", testenv.PostgresURL}} {
		t.Run(dialect.name, func(t *testing.T) { readOldRows(t, dialect.url(t)) })
	}
}

func readOldRows(t *testing.T, url string) {
	s := openStore(t, url)
	ctx := context.Background()
	mac := benchProfile("tm_1", 1)
	mac.TemplateID = "tpl_chrome_mac_fr"
	mac.Fingerprint = profile.Fingerprint{
		UserAgent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
		Platform:  "MacIntel", Locale: "fr-FR", Timezone: "Europe/Paris", Screen: profile.Screen{Width: 1440, Height: 900},
	}
	other := mac
	other.ID = "prf_0002"
	for _, p := range []profile.Profile{mac, other} {
		if _, err := s.Profiles().Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	sn := snapshot.Snapshot{ID: "snp_1", TeamID: "tm_1", ProfileID: mac.ID, Kind: snapshot.KindManual,
		Settings:  snapshot.Settings{Name: mac.Name, TemplateID: mac.TemplateID, Browser: mac.Browser, Fingerprint: mac.Fingerprint},
		CreatedBy: "usr_1", CreatedAt: at}
	if err := s.Snapshots().Create(ctx, sn); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"profiles", "snapshots"} {
		if _, err := bunstore.DB(s).ExecContext(ctx, "UPDATE "+table+" SET device = ''"); err != nil {
			t.Fatal(err)
		}
	}

	first, err := s.Profiles().ByID(ctx, "tm_1", mac.ID)
	if err != nil {
		t.Fatal(err)
	}
	fp := first.Fingerprint
	if err := fp.Validate(); err != nil {
		t.Fatalf("an old row reads as an invalid device: %v\n%+v", err, fp)
	}
	// What the row holds is kept; the rest is a Mac's.
	if fp.UserAgent != mac.Fingerprint.UserAgent || fp.Platform != "MacIntel" || fp.Locale != "fr-FR" || fp.Timezone != "Europe/Paris" ||
		fp.Screen.Width != 1440 || fp.Screen.Height != 900 || fp.Screen.PixelRatio != 2 || fp.WebGL.Vendor != "Google Inc. (Apple)" ||
		!slices.Equal(fp.Navigator.Languages, []string{"fr-FR", "fr", "en-US", "en"}) {
		t.Fatalf("old row read as %+v", fp)
	}
	for i, s := range []*bunstore.Store{s, openStore(t, url)} {
		got, err := s.Profiles().ByID(ctx, "tm_1", mac.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Fingerprint, fp) {
			t.Fatalf("read %d of the old row gave another device:\n%+v\nwant %+v", i, got.Fingerprint, fp)
		}
	}
	// A list shows the row's columns, and no device.
	listed, err := s.Profiles().List(ctx, "tm_1", profilestore.Filter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	summary := profile.Fingerprint{UserAgent: mac.Fingerprint.UserAgent, Platform: "MacIntel", Locale: "fr-FR", Timezone: "Europe/Paris", Screen: profile.Screen{Width: 1440, Height: 900}}
	if got := listed[1].Fingerprint; !reflect.DeepEqual(got, summary) { // newest first: mac is the second
		t.Fatalf("the old row listed as %+v, want %+v", got, summary)
	}
	o, err := s.Profiles().ByID(ctx, "tm_1", other.ID)
	if err != nil || o.Fingerprint.NoiseSeed == fp.NoiseSeed {
		t.Fatalf("two old profiles read as one device (%v)", err)
	}
	gotSnap, err := s.Snapshots().ByID(ctx, "tm_1", mac.ID, sn.ID)
	if err != nil || !reflect.DeepEqual(gotSnap.Settings.Fingerprint, fp) {
		t.Fatalf("the old snapshot shows another device than its profile (%v):\n%+v", err, gotSnap.Settings.Fingerprint)
	}

	// The next write stores the device it was read with.
	next := first
	next.Notes, next.Version = "changed", 2
	if err := s.Profiles().Update(ctx, next, 1); err != nil {
		t.Fatal(err)
	}
	var device string
	if err := bunstore.DB(s).NewRaw("SELECT device FROM profiles WHERE id = ?", mac.ID).Scan(ctx, &device); err != nil || device == "" {
		t.Fatalf("device after a write: %q, %v", device, err)
	}
	if got, err := s.Profiles().ByID(ctx, "tm_1", mac.ID); err != nil || !reflect.DeepEqual(got.Fingerprint, fp) {
		t.Fatalf("after the write, %+v (%v)", got.Fingerprint, err)
	}
}
