//go:build linux

package chromium

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnforcePreferencesKeepsTheRest(t *testing.T) {
	dir := t.TempDir()
	prefs := filepath.Join(dir, "Default", "Preferences")
	if err := os.MkdirAll(filepath.Dir(prefs), 0o700); err != nil {
		t.Fatal(err)
	}
	in := `{"profile":{"name":"Shop"},"webrtc":{"ip_handling_policy":"default","other":1}}`
	if err := os.WriteFile(prefs, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := enforcePreferences(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(prefs)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Profile struct {
			Name string `json:"name"`
		} `json:"profile"`
		WebRTC map[string]any `json:"webrtc"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Profile.Name != "Shop" || got.WebRTC["other"] != float64(1) ||
		got.WebRTC["ip_handling_policy"] != "disable_non_proxied_udp" || got.WebRTC["nonproxied_udp_enabled"] != false {
		t.Fatalf("preferences after enforcing: %s", raw)
	}

	// No Preferences yet, or unreadable ones: written afresh.
	for _, content := range []string{"", "not json"} {
		fresh := t.TempDir()
		if content != "" {
			p := filepath.Join(fresh, "Default", "Preferences")
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := enforcePreferences(fresh); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(filepath.Join(fresh, "Default", "Preferences"))
		if err != nil || string(raw) != `{"webrtc":{"ip_handling_policy":"disable_non_proxied_udp","multiple_routes_enabled":false,"nonproxied_udp_enabled":false}}` {
			t.Fatalf("fresh preferences %q: %s, %v", content, raw, err)
		}
	}
}

// TestEnforcePreferencesRemovesConfiguration: Preferences stored before
// they were cleaned at upload lose what is configuration before the start.
func TestEnforcePreferencesRemovesConfiguration(t *testing.T) {
	dir := t.TempDir()
	prefs := filepath.Join(dir, "Default", "Preferences")
	if err := os.MkdirAll(filepath.Dir(prefs), 0o700); err != nil {
		t.Fatal(err)
	}
	in := `{"extensions":{"settings":{"aapocclcgogkmnckokdopfmhonfmgoek":{"location":4}}},"proxy":{"mode":"direct"},` +
		`"download":{"default_directory":"/etc"},"profile":{"name":"<Shop>","created":13380000000000000123}}`
	if err := os.WriteFile(prefs, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := enforcePreferences(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(prefs)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"profile":{"created":13380000000000000123,"name":"<Shop>"},` +
		`"webrtc":{"ip_handling_policy":"disable_non_proxied_udp","multiple_routes_enabled":false,"nonproxied_udp_enabled":false}}`
	if string(raw) != want {
		t.Fatalf("preferences after enforcing:\n%s\nwant\n%s", raw, want)
	}
}

func TestEnforcePreferencesRefusesPreferencesOverTheBound(t *testing.T) {
	dir := t.TempDir()
	prefs := filepath.Join(dir, "Default", "Preferences")
	if err := os.MkdirAll(filepath.Dir(prefs), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(prefs, []byte(`{"a":"`+strings.Repeat("x", 4<<20)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	assertUnusable(t, enforcePreferences(dir), `entry "Default/Preferences": larger than 4194304 bytes`)
}
