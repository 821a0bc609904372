package config

import (
	"errors"
	"strings"
	"testing"
)

// Chromium's sandbox needs Linux: elsewhere BROWSER_RUNTIME=chromium stops
// the service at start and says what runs instead, and the default starts
// with leases only.
func TestBrowserRuntimeChromiumNeedsLinux(t *testing.T) {
	for _, c := range []struct {
		goos, value string
		want        string // "" when refused
	}{
		{"linux", "chromium", "chromium"},
		{"linux", "", "auto"},
		{"darwin", "chromium", ""},
		{"windows", "Chromium", ""},
		{"darwin", "", "auto"},
		{"windows", "none", "none"},
	} {
		l := loader{getenv: func(string) string { return c.value }}
		got := l.browserRuntime(c.goos)
		var cerr *Error
		switch {
		case c.want != "" && (l.err != nil || got != c.want):
			t.Errorf("BROWSER_RUNTIME=%q on %s: %q, %v; want %q", c.value, c.goos, got, l.err, c.want)
		case c.want == "" && !errors.As(l.err, &cerr):
			t.Errorf("BROWSER_RUNTIME=%q on %s: %q, %v; want a refusal", c.value, c.goos, got, l.err)
		case c.want == "" && (cerr.Variable != "BROWSER_RUNTIME" || !strings.Contains(cerr.Problem, "needs Linux, with bubblewrap") || !strings.Contains(cerr.Problem, "BROWSER_RUNTIME=none")):
			t.Errorf("BROWSER_RUNTIME=%q on %s refused with %q, want it to say Linux and bubblewrap are needed and BROWSER_RUNTIME=none", c.value, c.goos, l.err)
		}
	}
}
