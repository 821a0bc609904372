package wiring

import (
	"testing"

	"github.com/profilesvc/profilesvc/adapters/browser"
	"github.com/profilesvc/profilesvc/ports"
)

// versioned is a runtime of a known engine.
type versioned struct {
	browser.LeaseOnly
	version string
}

func (v versioned) Version() string { return v.version }

func TestEngineVersionComesFromTheRuntime(t *testing.T) {
	for _, c := range []struct {
		rt   ports.BrowserRuntime
		want string
	}{
		{browser.LeaseOnly{}, ""},
		{versioned{version: "157.0.8123.4"}, "157.0.8123.4"},
	} {
		if got := engineVersion(c.rt); got != c.want {
			t.Errorf("engineVersion(%T) = %q, want %q", c.rt, got, c.want)
		}
	}
}
