package browserdata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/profilesvc/profilesvc/domain"
)

// MaxPreferencesSize bounds Default/Preferences. A profile used for years
// writes a few hundred KiB of them; the bound keeps decoding one (which
// takes several times its size in memory) cheap.
const MaxPreferencesSize = 4 << 20

// ErrUnreadablePreferences is returned by CleanPreferences for preferences
// that are not one JSON object. Chromium starts such a profile with its
// default preferences, so callers drop the file rather than refuse the data.
var ErrUnreadablePreferences = errors.New("the preferences are not a JSON object")

// configurationKeys are the preferences that are configuration, not data:
// what the browser runs, what it may load, where its traffic and files go.
// Each is a dotted path (as Chromium names preferences), removed with
// everything under it.
var configurationKeys = []struct{ path, why string }{
	{"extensions", "installed extensions with their permissions and settings: an extension can set the proxy, read every page and rewrite requests"},
	{"proxy", "proxy mode, server, bypass list and PAC script: the service sets the browser's proxy"},
	{"download", "the download directory (a path of the host) and the file types opened as soon as they are downloaded (extensions_to_open)"},
	{"savefile", "the directory pages are saved to, a path of the host"},
	{"selectfile", "the last directory of a file chooser, a path of the host"},
	{"browser.enabled_labs_experiments", "chrome://flags experiments; Chromium keeps them in Local State, which is not kept either"},
	{"dns_over_https", "a DNS-over-HTTPS resolver, which would resolve names outside the proxy; Chromium keeps it in Local State"},
	{"protocol_handler", "sites allowed to open the host's applications through external protocols without asking"},
	{"devtools", "DevTools settings, among them folders of the host mapped into workspaces"},
	{"plugins", "always_open_pdf_externally, which saves every PDF to the download directory"},
}

// CleanPreferences returns the profile's preferences (the JSON of
// Default/Preferences) without the keys of configurationKeys. The output
// is compact JSON with keys in order, and every value otherwise as it was
// (numbers keep their digits); cleaning it again gives the same bytes.
//
// Preferences over MaxPreferencesSize are a domain validation error naming
// the entry. Preferences that are not one JSON object are
// ErrUnreadablePreferences. Duplicate keys keep the last value, and the
// output holds it alone, so the browser reads exactly what was checked.
func CleanPreferences(raw []byte) ([]byte, error) {
	if len(raw) > MaxPreferencesSize {
		return nil, preferencesTooLarge()
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var prefs map[string]any
	if err := dec.Decode(&prefs); err != nil || prefs == nil {
		return nil, ErrUnreadablePreferences
	}
	// Chromium refuses anything after the object, and so does this.
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrUnreadablePreferences
	}
	removeConfiguration(prefs, "")
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	// The browser reads "<" as it was written; escaping it would change
	// the bytes of every cleaning for nothing.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(prefs); err != nil {
		return nil, fmt.Errorf("write preferences: %w", err)
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

func preferencesTooLarge() error {
	return domain.Invalid("data", fmt.Sprintf("entry %q: larger than %d bytes", PreferencesName, MaxPreferencesSize))
}

// removeConfiguration deletes from m, the object at the dotted path prefix,
// the keys that are configuration. A key with dots of its own ("proxy.mode"
// at the top) is matched by its whole path, so no spelling escapes.
func removeConfiguration(m map[string]any, prefix string) {
	for key, v := range m {
		path := prefix + key
		if isConfiguration(path) {
			delete(m, key)
			continue
		}
		if sub, ok := v.(map[string]any); ok && leadsToConfiguration(path) {
			removeConfiguration(sub, path+".")
		}
	}
}

func isConfiguration(path string) bool {
	for _, c := range configurationKeys {
		if path == c.path || strings.HasPrefix(path, c.path+".") {
			return true
		}
	}
	return false
}

func leadsToConfiguration(path string) bool {
	for _, c := range configurationKeys {
		if strings.HasPrefix(c.path, path+".") {
			return true
		}
	}
	return false
}
