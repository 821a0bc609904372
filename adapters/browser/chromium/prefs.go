package chromium

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// enforcedPreferences are set in the profile's Preferences before every
// start, whatever its data say: WebRTC may use UDP only through the proxy
// (which carries none), so no candidate reveals an address outside it.
var enforcedPreferences = map[string]map[string]any{
	"webrtc": {
		"ip_handling_policy":      "disable_non_proxied_udp",
		"multiple_routes_enabled": false,
		"nonproxied_udp_enabled":  false,
	},
}

// enforcePreferences merges enforcedPreferences into
// <profileDir>/Default/Preferences, keeping every other preference.
func enforcePreferences(profileDir string) error {
	path := filepath.Join(profileDir, "Default", "Preferences")
	prefs := map[string]any{}
	raw, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("read preferences: %w", err)
	default:
		// Preferences a browser cannot read it would reset too: start
		// afresh rather than refuse the launch.
		if json.Unmarshal(raw, &prefs) != nil || prefs == nil {
			prefs = map[string]any{}
		}
	}
	for section, values := range enforcedPreferences {
		m, _ := prefs[section].(map[string]any)
		if m == nil {
			m = map[string]any{}
		}
		for k, v := range values {
			m[k] = v
		}
		prefs[section] = m
	}
	out, err := json.Marshal(prefs)
	if err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	return nil
}
