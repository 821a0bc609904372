package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RateLimit is RATE_LIMIT: the budget of Requests that each API key, and
// each user signed in with a token, may spend at once, refilling evenly over
// Window (one request back every Window/Requests). The zero value is off.
type RateLimit struct {
	Requests int
	Window   time.Duration
}

// On reports whether requests are limited.
func (r RateLimit) On() bool { return r.Requests > 0 }

func (l *loader) rateLimit(name, def string) RateLimit {
	v := l.str(name, def)
	if strings.EqualFold(v, "off") {
		return RateLimit{}
	}
	n, w, found := strings.Cut(v, "/")
	requests, err := strconv.Atoi(strings.TrimSpace(n))
	window, werr := time.ParseDuration(strings.TrimSpace(w))
	if !found || err != nil || werr != nil || requests < 1 || window < time.Second || window%time.Second != 0 {
		l.fail(name, fmt.Sprintf("%q is not requests/window such as 600/1m (a whole number of seconds), or off", v))
		return RateLimit{}
	}
	return RateLimit{Requests: requests, Window: window}
}
