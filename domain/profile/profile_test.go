package profile_test

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/profile"
)

var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// devices gives each template its representative device, so that tests
// know the device a profile starts with.
func devices(t profile.Template) profile.Fingerprint { return t.Device("") }

func fields(t *testing.T, err error) []string {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation {
		t.Fatalf("want a validation error, got %v", err)
	}
	var out []string
	for _, f := range de.Fields {
		out = append(out, f.Field)
	}
	return out
}

func TestEveryTemplateIsValidAndUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, tpl := range profile.Templates() {
		if seen[tpl.ID] {
			t.Errorf("duplicate template id %s", tpl.ID)
		}
		seen[tpl.ID] = true
		fp := tpl.Device("")
		// A template's device must pass the checks a client's override
		// would, set field by field.
		_, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "x", TemplateID: tpl.ID, Fingerprint: patchOf(fp)}, devices, now)
		if err != nil {
			t.Errorf("template %s does not pass its own checks: %v", tpl.ID, err)
		}
		if strings.Contains(tpl.Name, "131") {
			t.Errorf("template %s names a browser version: %q", tpl.ID, tpl.Name)
		}
	}
	if len(seen) < 8 {
		t.Fatalf("%d templates, want at least 8", len(seen))
	}
}

func TestNewStartsFromTheTemplate(t *testing.T) {
	tz := "Europe/Paris"
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{
		Name: "  Shop  ", TemplateID: "tpl_chrome_mac_us", Tags: []string{"a", " a ", "b"},
		Fingerprint: profile.FingerprintPatch{Timezone: &tz},
	}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	const ua = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36"
	if p.Name != "Shop" || p.Fingerprint.Timezone != tz || p.Fingerprint.UserAgent != ua || p.Fingerprint.Platform != "MacIntel" ||
		p.Version != 1 || p.Status() != profile.StatusIdle || !slices.Equal(p.Tags, []string{"a", "b"}) || p.Browser != profile.BrowserChromium {
		t.Fatalf("unexpected profile %+v", p)
	}
}

func TestNewNamesEveryBadField(t *testing.T) {
	bad := "Bad/Zone"
	_, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{
		Name: "", TemplateID: "tpl_nope", Tags: []string{""}, Fingerprint: profile.FingerprintPatch{Timezone: &bad},
	}, devices, now)
	got := fields(t, err)
	for _, f := range []string{"name", "templateId", "tags"} {
		if !slices.Contains(got, f) {
			t.Errorf("%s not named in %v", f, got)
		}
	}
}

func TestTimezones(t *testing.T) {
	for tz, ok := range map[string]bool{"UTC": true, "Asia/Tokyo": true, "America/Argentina/Buenos_Aires": true,
		"Local": false, "": false, "../etc/passwd": false, "Mars/Olympus": false, "EST": false} {
		_, err := profile.New("prf_1", "t", "u", profile.Settings{Name: "x", TemplateID: "tpl_chrome_win_us",
			Fingerprint: profile.FingerprintPatch{Timezone: &tz}}, devices, now)
		if (err == nil) != ok {
			t.Errorf("timezone %q: err = %v, want ok = %v", tz, err, ok)
		}
	}
}

func TestApplyIsPartialAndRaisesTheVersion(t *testing.T) {
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_win_us", Notes: "n"}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	name := "B"
	later := now.Add(time.Minute)
	next, err := p.Apply(profile.Patch{Name: &name}, devices, later)
	if err != nil {
		t.Fatal(err)
	}
	if next.Name != "B" || next.Notes != "n" || next.Version != 2 || !next.UpdatedAt.Equal(later) || !next.CreatedAt.Equal(now) {
		t.Fatalf("unexpected %+v", next)
	}
	if p.Name != "A" || p.Version != 1 {
		t.Fatal("Apply changed the original")
	}
	tooMany := make([]string, profile.MaxTags+1)
	for i := range tooMany {
		tooMany[i] = string(rune('a' + i))
	}
	if _, err := p.Apply(profile.Patch{Tags: &tooMany}, devices, later); !slices.Contains(fields(t, err), "tags") {
		t.Fatal("21 tags accepted")
	}
}

func TestSessionExpiry(t *testing.T) {
	s := profile.Session{ExpiresAt: now}
	if s.Expired(now.Add(-time.Nanosecond)) || !s.Expired(now) {
		t.Fatal("a lease ends exactly at ExpiresAt")
	}
}

func TestSessionTransitions(t *testing.T) {
	p, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_win_us"}, devices, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := p.Release(); !errors.Is(err, profile.ErrNotRunning) {
		t.Fatalf("release idle: %v", err)
	}
	running, ended, err := p.Launch("ses_1", "usr_2", true, time.Minute, now)
	if err != nil || ended != nil || running.Status() != profile.StatusRunning || !running.Session.ExpiresAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("launch: %+v %v %v", running, ended, err)
	}
	if p.Session != nil {
		t.Fatal("Launch changed the original")
	}
	if _, _, err := running.Launch("ses_2", "usr_3", false, time.Minute, now.Add(30*time.Second)); !errors.Is(err, profile.ErrRunning) {
		t.Fatalf("second launch: %v", err)
	}
	if err := running.CheckDeletable(); !errors.Is(err, profile.ErrRunning) {
		t.Fatalf("delete running: %v", err)
	}
	extended, err := running.Heartbeat("ses_1", time.Hour, now.Add(30*time.Second))
	if err != nil || !extended.Session.ExpiresAt.Equal(now.Add(30*time.Second+time.Hour)) {
		t.Fatalf("heartbeat: %+v %v", extended.Session, err)
	}
	if _, err := running.Heartbeat("ses_other", time.Hour, now); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("heartbeat of another session: %v", err)
	}
	if _, err := running.Heartbeat("ses_1", time.Hour, now.Add(time.Minute)); !errors.Is(err, profile.ErrSessionEnded) {
		t.Fatalf("heartbeat at expiry: %v", err)
	}
	// An expired lease is taken over, and reported as ended.
	taken, ended, err := running.Launch("ses_3", "usr_3", false, time.Minute, now.Add(time.Minute))
	if err != nil || ended == nil || ended.ID != "ses_1" || taken.Session.ID != "ses_3" {
		t.Fatalf("take over an expired lease: %+v %+v %v", taken.Session, ended, err)
	}
	idle, sess, err := taken.Release()
	if err != nil || idle.Session != nil || sess.ID != "ses_3" || idle.CheckDeletable() != nil {
		t.Fatalf("release: %+v %+v %v", idle, sess, err)
	}
}

// TestTagCountIsCheckedFirst: more than MaxTags tags are refused on the
// count, before any tag is looked at (so before work that grows with the
// list): the 21st tag here is invalid, and duplicates do not rescue a long
// list.
func TestTagCountIsCheckedFirst(t *testing.T) {
	for name, tags := range map[string][]string{
		"an invalid tag past the limit": append(slices.Repeat([]string{"ok"}, 20), ""),
		"duplicates past the limit":     slices.Repeat([]string{"same"}, 100000),
	} {
		_, err := profile.New("prf_1", "tm_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_mac_us", Tags: tags}, devices, now)
		var de *domain.Error
		if !errors.As(err, &de) || len(de.Fields) != 1 || de.Fields[0].Field != "tags" || de.Fields[0].Issue != "at most 20 tags" {
			t.Errorf("%s: %v, want one issue on tags: at most 20 tags", name, err)
		}
	}
	got, err := profile.New("prf_1", "tm_1", "usr_1", profile.Settings{Name: "A", TemplateID: "tpl_chrome_mac_us", Tags: slices.Repeat([]string{"same"}, 20)}, devices, now)
	if err != nil || !slices.Equal(got.Tags, []string{"same"}) {
		t.Fatalf("20 copies of one tag: %v, %v; want the tag once", got.Tags, err)
	}
}

func TestAutoTimezoneAndLocaleFollowTheProxy(t *testing.T) {
	auto := profile.Fingerprint{UserAgent: "ua", Platform: "Win32", Locale: profile.Auto, Timezone: profile.Auto, Screen: profile.Screen{Width: 1920, Height: 1080}}
	cases := []struct {
		tz, country    string
		wantTZ, wantLc string
	}{
		{"Asia/Tokyo", "JP", "Asia/Tokyo", "ja-JP"},
		{"Europe/Berlin", "de", "Europe/Berlin", "de-DE"},
		{"", "", "UTC", "en-US"},
		{"Not/AZone", "ZZ", "UTC", "en-US"},
	}
	for _, c := range cases {
		got := auto.Resolve(c.tz, c.country)
		if got.Timezone != c.wantTZ || got.Locale != c.wantLc {
			t.Errorf("Resolve(%q, %q) = %s, %s; want %s, %s", c.tz, c.country, got.Timezone, got.Locale, c.wantTZ, c.wantLc)
		}
	}
	fixed := profile.Fingerprint{Locale: "fr-FR", Timezone: "Europe/Paris"}
	if got := fixed.Resolve("Asia/Tokyo", "JP"); !reflect.DeepEqual(got, fixed) {
		t.Errorf("a fixed fingerprint changed: %+v", got)
	}
	tz, lc := profile.Auto, profile.Auto
	if _, err := profile.New("prf_1", "team_1", "usr_1", profile.Settings{Name: "n", TemplateID: "tpl_chrome_win_us", Fingerprint: profile.FingerprintPatch{Timezone: &tz, Locale: &lc}}, devices, time.Now()); err != nil {
		t.Fatalf("auto timezone and locale refused: %v", err)
	}
}
