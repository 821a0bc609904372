// Package webhook owns webhook endpoints (where a team wants its events
// pushed), deliveries (one event to one endpoint, with every attempt) and
// the rules of both: which events an endpoint takes, the retry schedule, and
// what counts as success.
package webhook

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
)

// Limits of an endpoint's settings.
const (
	MinSecretLength = 32
	MaxSecretLength = 256
	MaxURLLength    = 2048
	// AllEvents subscribes an endpoint to every event type.
	AllEvents = "*"
	// DefaultMaxInFlight is how many attempts to one endpoint a dispatcher
	// makes at once unless the endpoint says otherwise; MaxMaxInFlight
	// bounds what it may say, so one endpoint cannot take every worker.
	DefaultMaxInFlight = 16
	MaxMaxInFlight     = 256
	// MaxRateLimit bounds an endpoint's attempts per second; 0 is no limit.
	MaxRateLimit = 100000
	// MaxEvents bounds a subscription as sent: more names than there are
	// event types, so that every type, repeated or not, fits.
	MaxEvents = 32
)

// Endpoint is a customer's URL that receives a team's events. The secret
// is kept encrypted (SecretSealed); it is never shown again.
type Endpoint struct {
	ID           string
	TeamID       string
	URL          string
	Events       []string
	SecretSealed []byte
	Enabled      bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
	// MaxInFlight bounds the attempts to the endpoint a dispatcher makes at
	// once, so a fast receiver is not held to a common cap and a slow one
	// holds at most this many workers. RateLimit bounds its attempts per
	// second (0: no limit), for receivers that must not be flooded.
	MaxInFlight int
	RateLimit   int
}

// NewEndpoint returns an enabled endpoint of teamID. url and events are
// what CheckURL and CheckEvents returned; sealed is the secret (checked with
// CheckSecret) as the service's secret box sealed it.
func NewEndpoint(id, teamID, url string, events []string, sealed []byte, now time.Time) Endpoint {
	now = now.UTC()
	return Endpoint{ID: id, TeamID: teamID, URL: url, Events: events, SecretSealed: sealed, Enabled: true,
		CreatedAt: now, UpdatedAt: now, MaxInFlight: DefaultMaxInFlight}
}

// EndpointChange is a checked partial update of an endpoint: nil fields stay.
type EndpointChange struct {
	URL          *string
	Events       []string
	SecretSealed []byte
	Enabled      *bool
	MaxInFlight  *int
	RateLimit    *int
}

// Change returns the endpoint with ch applied at now.
func (e Endpoint) Change(ch EndpointChange, now time.Time) Endpoint {
	if ch.URL != nil {
		e.URL = *ch.URL
	}
	if ch.Events != nil {
		e.Events = ch.Events
	}
	if ch.SecretSealed != nil {
		e.SecretSealed = ch.SecretSealed
	}
	if ch.Enabled != nil {
		e.Enabled = *ch.Enabled
	}
	if ch.MaxInFlight != nil {
		e.MaxInFlight = *ch.MaxInFlight
	}
	if ch.RateLimit != nil {
		e.RateLimit = *ch.RateLimit
	}
	e.UpdatedAt = now.UTC()
	return e
}

// Wants reports whether the endpoint takes events of type t.
func (e Endpoint) Wants(t event.Type) bool {
	return e.Enabled && (slices.Contains(e.Events, AllEvents) || slices.Contains(e.Events, string(t)))
}

// CheckURL validates an endpoint address: https, or http too when private
// targets are allowed (development and tests). Where it may connect is the
// delivery adapter's check, made after DNS resolution.
func CheckURL(v *domain.Validation, raw string, allowHTTP bool) string {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	switch {
	case raw == "" || len(raw) > MaxURLLength || err != nil || u.Host == "" || u.Hostname() == "":
		v.Add("url", "must be an absolute https URL")
	case u.User != nil:
		v.Add("url", "must not carry credentials")
	case u.Fragment != "":
		v.Add("url", "must not carry a fragment")
	case u.Scheme == "https":
	case u.Scheme == "http" && allowHTTP:
	default:
		v.Add("url", "must use https")
	}
	return raw
}

// CheckEvents validates a subscription: known event types or "*", at least
// one and at most MaxEvents as sent (counted before any other work), no
// duplicates kept.
func CheckEvents(v *domain.Validation, events []string) []string {
	switch {
	case len(events) == 0:
		v.Add("events", `must name at least one event type, or "*" for all`)
		return nil
	case len(events) > MaxEvents:
		v.Add("events", "must name at most "+strconv.Itoa(MaxEvents)+" event types")
		return nil
	}
	out := make([]string, 0, len(events))
	for _, e := range events {
		if e != AllEvents && !event.Known(event.Type(e)) {
			v.Add("events", "unknown event type "+quote(e))
			return nil
		}
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// CheckSecret validates a signing secret: 32 to 256 characters.
func CheckSecret(v *domain.Validation, secret string) {
	if n := utf8.RuneCountInString(secret); n < MinSecretLength || len(secret) > MaxSecretLength {
		v.Add("secret", "must be 32 to 256 characters")
	}
}

// CheckMaxInFlight validates an endpoint's bound on attempts at once.
func CheckMaxInFlight(v *domain.Validation, n int) {
	if n < 1 || n > MaxMaxInFlight {
		v.Add("maxInFlight", "must be 1 to 256")
	}
}

// CheckRateLimit validates an endpoint's attempts per second; 0 is none.
func CheckRateLimit(v *domain.Validation, n int) {
	if n < 0 || n > MaxRateLimit {
		v.Add("rateLimit", "must be 1 to 100000 attempts per second, or null for no limit")
	}
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return `"` + s + `"`
}
