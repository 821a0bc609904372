package config

import (
	"fmt"
	"time"
)

// Fleet is how the instances sharing a database form one browser fleet:
// how often each tells the others its room, how long the others wait for
// it before taking it for gone, and how long a stopping instance lets its
// browsers run before it saves and stops them.
type Fleet struct {
	// Heartbeat is FLEET_HEARTBEAT: how often an instance records its
	// room in the fleet's registry, and looks for instances gone.
	Heartbeat time.Duration
	// Timeout is FLEET_TIMEOUT: an instance that has not beaten for this
	// long is gone, and its sessions end as crashed.
	Timeout time.Duration
	// DrainTimeout is DRAIN_TIMEOUT: after SIGTERM (or SIGUSR1) the
	// instance starts no more browsers and lets the ones it runs go on
	// for at most this long; 0 saves and stops them at once.
	DrainTimeout time.Duration
}

func (l *loader) fleet() Fleet {
	f := Fleet{
		Heartbeat:    l.duration("FLEET_HEARTBEAT", 5*time.Second),
		Timeout:      l.duration("FLEET_TIMEOUT", 30*time.Second),
		DrainTimeout: l.durationOrZero("DRAIN_TIMEOUT", 15*time.Second),
	}
	if f.Timeout < 2*f.Heartbeat {
		l.fail("FLEET_TIMEOUT", fmt.Sprintf("%s is less than twice FLEET_HEARTBEAT (%s): one late beat would take a live instance for gone", f.Timeout, f.Heartbeat))
	}
	return f
}

// durationOrZero reads a duration that may be 0.
func (l *loader) durationOrZero(name string, def time.Duration) time.Duration {
	v := l.read(name, def.String())
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		l.fail(name, fmt.Sprintf("%q is not a duration such as 0s, 30s or 5m", v))
		return def
	}
	return d
}
