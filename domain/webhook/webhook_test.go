package webhook_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

var (
	t0       = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	schedule = webhook.Schedule{0, 5 * time.Second, 25 * time.Second, 125 * time.Second}
)

func TestScheduleAndOutcomes(t *testing.T) {
	ep := webhook.Endpoint{ID: "whk_1", TeamID: "team_1", Events: []string{"*"}, Enabled: true}
	e := event.Event{ID: "evt_1", TeamID: "team_1", Type: event.ProfileCreated, OccurredAt: t0}
	d := webhook.NewDelivery("dlv_1", ep, e, []byte(`{}`), schedule, t0)
	if d.Status != webhook.StatusPending || !d.NextAttemptAt.Equal(t0) {
		t.Fatalf("new delivery %+v", d)
	}
	at := t0
	var gaps []time.Duration
	for i := range 4 {
		d = d.Record(webhook.Attempt{At: at, StatusCode: 500}, schedule, at)
		if i < 3 {
			gaps = append(gaps, d.NextAttemptAt.Sub(at))
			at = d.NextAttemptAt
		}
	}
	if !slices.Equal(gaps, []time.Duration{5 * time.Second, 25 * time.Second, 125 * time.Second}) {
		t.Fatalf("gaps %v", gaps)
	}
	if d.Status != webhook.StatusFailed || len(d.Attempts) != 4 || d.Attempts[3].N != 4 {
		t.Fatalf("after four failures: %+v", d)
	}
	d, ok := d.Retry(at)
	if !ok || d.Status != webhook.StatusPending || d.RoundStart != 4 {
		t.Fatalf("retry: %+v", d)
	}
	d = d.Record(webhook.Attempt{At: at, StatusCode: 502}, schedule, at)
	if d.Status != webhook.StatusPending || d.NextAttemptAt.Sub(at) != 5*time.Second || d.Attempts[4].N != 5 {
		t.Fatalf("a retried delivery gets a new round: %+v", d)
	}
	d = d.Record(webhook.Attempt{At: at, StatusCode: 200}, schedule, at)
	if d.Status != webhook.StatusSucceeded {
		t.Fatalf("200 must succeed: %+v", d)
	}
	if _, ok := d.Retry(at); ok {
		t.Fatal("a succeeded delivery was retried")
	}
}

func TestOnly200Succeeds(t *testing.T) {
	for _, code := range []int{0, 201, 204, 301, 302, 400, 500} {
		if (webhook.Attempt{StatusCode: code}).Succeeded() {
			t.Errorf("status %d counted as success", code)
		}
	}
	if (webhook.Attempt{StatusCode: 200, Error: "body cut short"}).Succeeded() {
		t.Error("an attempt with an error counted as success")
	}
}

func TestWants(t *testing.T) {
	ep := webhook.Endpoint{Events: []string{"profile.created"}, Enabled: true}
	if !ep.Wants(event.ProfileCreated) || ep.Wants(event.ProfileDeleted) {
		t.Fatal("subscription by type")
	}
	ep.Events = []string{"*"}
	if !ep.Wants(event.TeamMemberRemoved) {
		t.Fatal("* takes everything")
	}
	ep.Enabled = false
	if ep.Wants(event.ProfileCreated) {
		t.Fatal("a disabled endpoint takes nothing")
	}
}

func TestChecks(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/in": true, "http://hooks.example.com": false, "ftp://x": false,
		"https://user:pw@hooks.example.com": false, "https://": false, "": false, "https://h.example.com/#x": false,
	} {
		v := &domain.Validation{}
		webhook.CheckURL(v, raw, false)
		if (v.Err() == nil) != ok {
			t.Errorf("url %q: err %v", raw, v.Err())
		}
	}
	v := &domain.Validation{}
	webhook.CheckURL(v, "http://127.0.0.1:8080", true)
	if v.Err() != nil {
		t.Errorf("http with private targets allowed: %v", v.Err())
	}
	v = &domain.Validation{}
	if got := webhook.CheckEvents(v, []string{"profile.created", "*", "profile.created"}); v.Err() != nil || len(got) != 2 {
		t.Errorf("events: %v %v", got, v.Err())
	}
	v = &domain.Validation{}
	webhook.CheckEvents(v, []string{"profile.created", "nope"})
	webhook.CheckSecret(v, "short")
	if v.Err() == nil {
		t.Error("unknown event and short secret accepted")
	}
}

func TestPayloadIsSPECsShape(t *testing.T) {
	e := event.Event{ID: "evt_1", Type: event.ProfileCreated, OccurredAt: t0, Data: json.RawMessage(`{"profile":{"id":"prf_1"}}`)}
	raw, err := webhook.Payload(e)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"id":"evt_1","type":"profile.created","created_at":"2030-01-01T00:00:00Z","data":{"profile":{"id":"prf_1"}}}` {
		t.Fatalf("payload %s", raw)
	}
}

func TestEndpointChange(t *testing.T) {
	created := time.Date(2030, 1, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))
	e := webhook.NewEndpoint("whk_1", "tm_1", "https://a.example/hook", []string{"profile.created"}, []byte("sealed"), created)
	if !e.Enabled || e.CreatedAt.Location() != time.UTC || !e.UpdatedAt.Equal(created) {
		t.Fatalf("NewEndpoint = %+v: want enabled, times in UTC", e)
	}
	later := created.Add(time.Hour)
	same := e.Change(webhook.EndpointChange{}, later)
	if same.URL != e.URL || string(same.SecretSealed) != "sealed" || !same.Enabled || len(same.Events) != 1 || !same.UpdatedAt.Equal(later) {
		t.Fatalf("an empty change altered the endpoint: %+v", same)
	}
	url, off := "https://b.example/hook", false
	next := e.Change(webhook.EndpointChange{URL: &url, Events: []string{"*"}, SecretSealed: []byte("new"), Enabled: &off}, later)
	if next.URL != url || next.Events[0] != "*" || string(next.SecretSealed) != "new" || next.Enabled || !next.CreatedAt.Equal(created) {
		t.Fatalf("Change = %+v", next)
	}
	if e.URL != "https://a.example/hook" {
		t.Fatal("Change altered the endpoint it was called on")
	}
	if e.MaxInFlight != 16 || e.RateLimit != 0 {
		t.Fatalf("NewEndpoint limits: max in flight %d, rate limit %d; want 16 and none", e.MaxInFlight, e.RateLimit)
	}
	four, ten := 4, 10
	limited := e.Change(webhook.EndpointChange{MaxInFlight: &four, RateLimit: &ten}, later)
	if limited.MaxInFlight != 4 || limited.RateLimit != 10 || same.MaxInFlight != 16 {
		t.Fatalf("Change of limits = %+v", limited)
	}
}

// A subscription is counted as sent, before its names are looked at: every
// type and "*" fit, repeated up to the bound; one name more is refused.
func TestCheckEventsCount(t *testing.T) {
	if n := len(event.Types) + 1; n > webhook.MaxEvents {
		t.Fatalf("%d distinct names do not fit in %d", n, webhook.MaxEvents)
	}
	names := make([]string, 0, webhook.MaxEvents+1)
	for len(names) < webhook.MaxEvents {
		names = append(names, string(event.Types[len(names)%len(event.Types)]))
	}
	v := &domain.Validation{}
	if got := webhook.CheckEvents(v, names); v.Err() != nil || len(got) != len(event.Types) {
		t.Fatalf("%d names: %v %v", len(names), got, v.Err())
	}
	v = &domain.Validation{}
	if got := webhook.CheckEvents(v, append(names, "nope")); got != nil {
		t.Fatalf("%d names kept %v", len(names)+1, got)
	}
	var de *domain.Error
	if !errors.As(v.Err(), &de) || len(de.Fields) != 1 || de.Fields[0].Field != "events" || de.Fields[0].Issue != "must name at most 32 event types" {
		t.Fatalf("%d names: %v, want one issue naming the count", len(names)+1, v.Err())
	}
}

func TestCheckLimits(t *testing.T) {
	for _, c := range []struct {
		maxInFlight, rateLimit int
		want                   int
	}{
		{1, 0, 0}, {256, 100000, 0}, {16, 1, 0},
		{0, 0, 1}, {257, 0, 1}, {-1, 0, 1},
		{16, -1, 1}, {16, 100001, 1}, {0, -1, 2},
	} {
		v := &domain.Validation{}
		webhook.CheckMaxInFlight(v, c.maxInFlight)
		webhook.CheckRateLimit(v, c.rateLimit)
		var fields []domain.FieldIssue
		var de *domain.Error
		if errors.As(v.Err(), &de) {
			fields = de.Fields
		}
		if len(fields) != c.want {
			t.Errorf("max in flight %d, rate limit %d: issues %v, want %d", c.maxInFlight, c.rateLimit, fields, c.want)
		}
	}
}

// An attempt claimed and lost with its instance counts: the next one is
// numbered after it and the schedule moves on past it.
func TestLostAttemptsCount(t *testing.T) {
	ep := webhook.Endpoint{ID: "whk_1", TeamID: "team_1", Events: []string{"*"}, Enabled: true}
	d := webhook.NewDelivery("dlv_1", ep, event.Event{ID: "evt_1", Type: event.ProfileCreated}, []byte(`{}`), schedule, t0)
	if n := d.AttemptNumber(); n != 1 {
		t.Fatalf("a new delivery's attempt number %d, want 1", n)
	}
	d.Started = 2 // claimed twice; the first claim's outcome was lost
	at := t0.Add(time.Minute)
	d = d.Record(webhook.Attempt{At: at, StatusCode: 500}, schedule, at)
	if len(d.Attempts) != 1 || d.Attempts[0].N != 2 || d.Status != webhook.StatusPending {
		t.Fatalf("recorded %+v, status %s; want one attempt numbered 2, pending", d.Attempts, d.Status)
	}
	if want := at.Add(25 * time.Second); !d.NextAttemptAt.Equal(want) {
		t.Fatalf("next attempt at %v, want %v (the third delay)", d.NextAttemptAt, want)
	}
	d.Started++ // the next claim
	if n := d.AttemptNumber(); n != 3 {
		t.Fatalf("the next attempt number %d, want 3", n)
	}
	d.Started = 4
	d = d.Record(webhook.Attempt{At: at, StatusCode: 500}, schedule, at)
	if d.Status != webhook.StatusFailed {
		t.Fatalf("after the fourth attempt, status %s, want failed", d.Status)
	}
	retried, ok := d.Retry(at)
	retried.Started++ // the next claim
	if !ok || retried.RoundStart != 4 || retried.AttemptNumber() != 5 {
		t.Fatalf("retry: ok %v, round start %d, next number %d; want true, 4, 5", ok, retried.RoundStart, retried.AttemptNumber())
	}
}
