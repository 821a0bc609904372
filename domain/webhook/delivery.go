package webhook

import (
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/profilesvc/profilesvc/domain/event"
)

// Status is where a delivery stands.
type Status string

// Delivery states.
const (
	StatusPending   Status = "pending"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
)

// ParseStatus reads a status filter value.
func ParseStatus(s string) (Status, bool) {
	switch Status(s) {
	case StatusPending, StatusSucceeded, StatusFailed:
		return Status(s), true
	}
	return "", false
}

// Attempt is one try to deliver.
type Attempt struct {
	N          int
	At         time.Time
	StatusCode int // 0 when no answer came
	LatencyMs  int64
	Error      string
	// Answer is the start of the receiver's answer, as text (Excerpt).
	Answer string
}

// MaxAnswerRunes bounds what an attempt keeps of the receiver's answer.
const MaxAnswerRunes = 200

// Excerpt is the start of a receiver's answer as an attempt keeps it: at
// most MaxAnswerRunes characters of valid UTF-8, each run of control
// characters and spaces folded into one space, so that whatever a
// receiver sends reads as one line of text.
func Excerpt(body []byte) string {
	var b strings.Builder
	space := false
	n := 0
	for _, r := range strings.ToValidUTF8(string(body), "\uFFFD") {
		if n == MaxAnswerRunes {
			break
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) || unicode.In(r, unicode.Cf) {
			space = b.Len() > 0
			continue
		}
		if space {
			if n+1 == MaxAnswerRunes {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

// Succeeded reports whether the receiver took the delivery: only 200 counts.
func (a Attempt) Succeeded() bool { return a.StatusCode == 200 && a.Error == "" }

// Delivery is one event on its way to one endpoint. Payload is the exact
// body sent on every attempt, so the signature and the event id never
// change between attempts.
type Delivery struct {
	ID         string
	TeamID     string
	EndpointID string
	EventID    string
	EventType  event.Type
	Payload    []byte
	Status     Status
	Attempts   []Attempt
	// Started counts the attempts claimed, set by the store when a
	// dispatcher claims the delivery: an attempt whose outcome was lost
	// with its instance counts although Attempts does not hold it.
	Started int
	// RoundStart is how many attempts were made before the current round:
	// 0, until a failed delivery is retried by hand.
	RoundStart    int
	NextAttemptAt time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// NewDelivery returns the pending delivery of payload to an endpoint, due
// at the schedule's first delay.
func NewDelivery(id string, ep Endpoint, e event.Event, payload []byte, schedule Schedule, now time.Time) Delivery {
	now = now.UTC()
	return Delivery{
		ID: id, TeamID: ep.TeamID, EndpointID: ep.ID, EventID: e.ID, EventType: e.Type, Payload: payload,
		Status: StatusPending, NextAttemptAt: now.Add(schedule.Delay(0)), CreatedAt: now, UpdatedAt: now,
	}
}

// AttemptNumber is the number of the attempt under way: every attempt
// claimed counts, those whose outcome was lost too.
func (d Delivery) AttemptNumber() int {
	return max(d.Started, len(d.Attempts)+1)
}

// Record adds the attempt under way and decides what follows: succeeded on
// a 200, another attempt when the schedule has one, failed when it has run
// out. Attempts lost with their instance use up the schedule too.
func (d Delivery) Record(a Attempt, schedule Schedule, now time.Time) Delivery {
	now = now.UTC()
	a.N = d.AttemptNumber()
	d.Started = a.N
	d.Attempts = append(append([]Attempt(nil), d.Attempts...), a)
	d.UpdatedAt = now
	switch {
	case a.Succeeded():
		d.Status = StatusSucceeded
	case a.N-d.RoundStart >= schedule.Attempts():
		d.Status = StatusFailed
	default:
		d.Status = StatusPending
		d.NextAttemptAt = a.At.Add(schedule.Delay(a.N - d.RoundStart))
	}
	return d
}

// Retry queues a failed delivery again for a fresh round of the schedule,
// starting now and keeping the attempts made so far.
func (d Delivery) Retry(now time.Time) (Delivery, bool) {
	if d.Status != StatusFailed {
		return d, false
	}
	d.Status, d.NextAttemptAt, d.UpdatedAt = StatusPending, now.UTC(), now.UTC()
	d.RoundStart = max(d.Started, len(d.Attempts))
	return d, true
}

// Schedule is the delay before each attempt: the first is normally 0, and
// the number of delays is the number of attempts.
type Schedule []time.Duration

// Attempts is how many attempts a delivery gets.
func (s Schedule) Attempts() int { return len(s) }

// Delay is the wait before attempt n+1 (n attempts made so far).
func (s Schedule) Delay(n int) time.Duration {
	if n < len(s) {
		return s[n]
	}
	return 0
}

// Payload is SPEC's webhook body: {id, type, created_at, data}.
func Payload(e event.Event) ([]byte, error) {
	return json.Marshal(struct {
		ID        string          `json:"id"`
		Type      event.Type      `json:"type"`
		CreatedAt string          `json:"created_at"`
		Data      json.RawMessage `json:"data"`
	}{e.ID, e.Type, e.OccurredAt.UTC().Format(time.RFC3339Nano), e.Data})
}
