//go:build linux

package chromium

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// versionTimeout bounds `chromium --version`.
const versionTimeout = 30 * time.Second

var fullVersion = regexp.MustCompile(`\b(\d+)\.(\d+)\.(\d+)\.(\d+)\b`)

// engineVersion asks the binary for its version ("Chromium 156.0.8078.108
// built on Debian..." or "Google Chrome 156.0.8078.108").
func engineVersion(path string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	v := fullVersion.FindString(string(out))
	if v == "" {
		return "", fmt.Errorf("%s --version printed no version: %q", path, strings.TrimSpace(string(out)))
	}
	return v, nil
}

// majorOf is the major version of a full version ("156" of
// "156.0.8078.108"), or "".
func majorOf(version string) string {
	major, _, _ := strings.Cut(version, ".")
	if _, err := strconv.Atoi(major); err != nil {
		return ""
	}
	return major
}

// withEngineVersion rewrites the Chrome (and Edge) version of a user agent
// to the engine's, in the reduced form current Chrome sends
// ("Chrome/156.0.0.0"). A user agent that names no Chrome version, or an
// unknown engine, leaves it as it is.
func withEngineVersion(ua, version string) string {
	major := majorOf(version)
	if major == "" {
		return ua
	}
	ua = chromeVersion.ReplaceAllString(ua, "Chrome/"+major+".0.0.0")
	return edgeVersion.ReplaceAllString(ua, "Edg/"+major+".0.0.0")
}

// greasedBrand is the made-up brand Chromium adds to its client hints for
// a major version, and where in the list of three it goes, as Chromium's
// user_agent_utils derives them (the major version seeds the choice of
// characters, version and order).
func greasedBrand(major int) (brand, version string, order [3]int) {
	chars := []string{" ", "(", ":", "-", ".", "/", ")", ";", "=", "?", "_"}
	versions := []string{"8", "99", "24"}
	orders := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	brand = "Not" + chars[major%len(chars)] + "A" + chars[(major+1)%len(chars)] + "Brand"
	return brand, versions[major%len(versions)], orders[major%len(orders)]
}
