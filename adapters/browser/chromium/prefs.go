//go:build linux

package chromium

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/profilesvc/profilesvc/domain/browserdata"
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

// enforcePreferences rewrites <profileDir>/Default/Preferences before a
// start: without the keys that are configuration (the rules of
// browserdata.CleanPreferences, which data stored before them may still
// break: an extension, a proxy) and with enforcedPreferences merged in,
// keeping every other preference as it was.
func enforcePreferences(profileDir string) error {
	path := filepath.Join(profileDir, filepath.FromSlash(browserdata.PreferencesName))
	prefs := map[string]any{}
	raw, err := readPreferences(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return err
	default:
		clean, err := browserdata.CleanPreferences(raw)
		switch {
		case errors.Is(err, browserdata.ErrUnreadablePreferences):
			// Preferences a browser cannot read it would reset too:
			// start afresh rather than refuse the launch.
		case err != nil:
			return unusableData(err)
		default:
			dec := json.NewDecoder(bytes.NewReader(clean))
			// Numbers keep their digits, as CleanPreferences keeps them.
			dec.UseNumber()
			if err := dec.Decode(&prefs); err != nil {
				return fmt.Errorf("read preferences: %w", err)
			}
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
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(prefs); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	if err := os.WriteFile(path, bytes.TrimSuffix(out.Bytes(), []byte("\n")), 0o600); err != nil {
		return fmt.Errorf("write preferences: %w", err)
	}
	return nil
}

// readPreferences reads the file, refusing one past
// browserdata.MaxPreferencesSize before it is read whole.
func readPreferences(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, browserdata.MaxPreferencesSize+1))
	if err != nil {
		return nil, fmt.Errorf("read preferences: %w", err)
	}
	if len(raw) > browserdata.MaxPreferencesSize {
		return nil, unusableData(fmt.Errorf("entry %q: larger than %d bytes", browserdata.PreferencesName, browserdata.MaxPreferencesSize))
	}
	return raw, nil
}
