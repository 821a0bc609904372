// Package event owns the domain events that state changes emit. An event is
// written to the outbox in the same transaction as the change that caused it;
// the webhook pipeline reads it from there.
package event

import (
	"encoding/json"
	"time"
)

// Type names an event kind, as listed in the interface specification.
type Type string

// The event types of the interface.
const (
	ProfileCreated    Type = "profile.created"
	ProfileUpdated    Type = "profile.updated"
	ProfileDeleted    Type = "profile.deleted"
	ProfileLaunched   Type = "profile.launched"
	ProfileStopped    Type = "profile.stopped"
	ProxyAdded        Type = "proxy.added"
	ProxyFailed       Type = "proxy.failed"
	ProxyAssigned     Type = "proxy.assigned"
	TeamMemberAdded   Type = "team.member_added"
	TeamMemberRemoved Type = "team.member_removed"
)

// Types lists every event type in the order of the specification.
var Types = []Type{ProfileCreated, ProfileUpdated, ProfileDeleted, ProfileLaunched, ProfileStopped,
	ProxyAdded, ProxyFailed, ProxyAssigned, TeamMemberAdded, TeamMemberRemoved}

// Known reports whether t is one of Types.
func Known(t Type) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

// Event is one committed fact. Data holds the event-specific JSON object of
// the webhook payload (for example {"profile": {...}}).
type Event struct {
	ID         string
	TeamID     string
	Type       Type
	OccurredAt time.Time
	Data       json.RawMessage
}

// New builds an event, encoding data as its JSON object.
func New(id, teamID string, typ Type, at time.Time, data any) (Event, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, err
	}
	return Event{ID: id, TeamID: teamID, Type: typ, OccurredAt: at.UTC(), Data: raw}, nil
}
