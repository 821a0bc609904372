package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
)

// wantFields checks a validation error's fields and issues, in order.
func wantFields(t *testing.T, err error, want ...domain.FieldIssue) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindValidation || !slices.Equal(de.Fields, want) {
		t.Fatalf("error %v, want validation of %+v", err, want)
	}
}

// woken reports whether the dispatcher was woken, and takes the wake-up.
func (f *fixture) woken() bool {
	select {
	case <-f.svc.d.Waker.ch:
		return true
	default:
		return false
	}
}

func TestCreateEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	got, err := f.svc.Create(ctx, admin, CreateInput{URL: " https://hooks.example.com/in ", Events: []string{"profile.created", "profile.created", "profile.deleted"}, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "whk_001" || got.TeamID != "team_1" || got.URL != "https://hooks.example.com/in" || !got.Enabled ||
		!slices.Equal(got.Events, []string{"profile.created", "profile.deleted"}) || string(got.SecretSealed) != "sealed:"+secret || !got.CreatedAt.Equal(t0) {
		t.Fatalf("endpoint %+v", got)
	}
	wantStrings(t, "checked", f.sender.Checked(), "https://hooks.example.com/in")
	stored, err := f.svc.Get(ctx, admin, got.ID)
	if err != nil || string(stored.SecretSealed) != "sealed:"+secret {
		t.Fatalf("stored %+v %v", stored, err)
	}
}

func TestCreateEndpointValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)

	_, err := f.svc.Create(ctx, member, CreateInput{URL: "https://hooks.example.com/in", Events: []string{"*"}, Secret: secret})
	apptest.WantKind(t, err, domain.KindForbidden)

	_, err = f.svc.Create(ctx, admin, CreateInput{URL: "http://hooks.example.com/in", Events: []string{"profile.exploded"}, Secret: "short"})
	wantFields(t, err,
		domain.FieldIssue{Field: "url", Issue: "must use https"},
		domain.FieldIssue{Field: "events", Issue: `unknown event type "profile.exploded"`},
		domain.FieldIssue{Field: "secret", Issue: "must be 32 to 256 characters"},
	)
	// An address that is wrong on its face is not resolved.
	wantStrings(t, "checked", f.sender.Checked())

	f.sender.refuse = errors.New("hooks.internal resolves to 10.0.0.7, a private address")
	_, err = f.svc.Create(ctx, admin, CreateInput{URL: "https://hooks.internal/in", Events: []string{"*"}, Secret: secret})
	wantFields(t, err, domain.FieldIssue{Field: "url", Issue: "hooks.internal resolves to 10.0.0.7, a private address"})
	wantStrings(t, "checked", f.sender.Checked(), "https://hooks.internal/in")

	f.sender.refuse = nil
	f.box.sealErr = errors.New("no key")
	if _, err := f.svc.Create(ctx, admin, CreateInput{URL: "https://hooks.example.com/in", Events: []string{"*"}, Secret: secret}); err == nil || err.Error() != "no key" {
		t.Fatalf("create with a failing box: %v", err)
	}
	page, err := f.svc.List(ctx, admin, "", 10)
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("endpoints after refusals: %+v %v", page.Items, err)
	}
}

func TestCreateEndpointOverHTTPWhenPrivateTargetsAreAllowed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.AllowPrivateTargets = true
	f.build()

	if got := f.endpoint(t, "http://127.0.0.1:8080/in", "*"); got.URL != "http://127.0.0.1:8080/in" {
		t.Fatalf("endpoint %+v", got)
	}
}

func TestUpdateEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	f.clock.Advance(time.Minute)
	url, events, newSecret, off := "https://hooks.example.com/v2", []string{"profile.launched"}, secret+"-2", false

	got, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{URL: &url, Events: &events, Secret: &newSecret, Enabled: &off})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != url || !slices.Equal(got.Events, events) || string(got.SecretSealed) != "sealed:"+newSecret || got.Enabled || !got.UpdatedAt.Equal(t0.Add(time.Minute)) || !got.CreatedAt.Equal(t0) {
		t.Fatalf("endpoint %+v", got)
	}
	stored, err := f.svc.Get(ctx, admin, ep.ID)
	if err != nil || stored.URL != url || stored.Enabled {
		t.Fatalf("stored %+v %v", stored, err)
	}
	wantStrings(t, "checked", f.sender.Checked(), "https://hooks.example.com/in", url)
}

func TestUpdateEndpointValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	bad, none, short := "ftp://hooks.example.com", []string{}, "short"
	internal := "https://metadata.internal/"

	_, err := f.svc.Update(ctx, member, ep.ID, UpdateInput{URL: &internal})
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Update(ctx, other, ep.ID, UpdateInput{URL: &internal})
	apptest.WantKind(t, err, domain.KindNotFound)

	_, err = f.svc.Update(ctx, admin, ep.ID, UpdateInput{URL: &bad, Events: &none, Secret: &short})
	wantFields(t, err,
		domain.FieldIssue{Field: "url", Issue: "must use https"},
		domain.FieldIssue{Field: "events", Issue: `must name at least one event type, or "*" for all`},
		domain.FieldIssue{Field: "secret", Issue: "must be 32 to 256 characters"},
	)

	f.sender.refuse = errors.New("metadata.internal resolves to 169.254.169.254, a link-local address")
	_, err = f.svc.Update(ctx, admin, ep.ID, UpdateInput{URL: &internal})
	wantFields(t, err, domain.FieldIssue{Field: "url", Issue: "metadata.internal resolves to 169.254.169.254, a link-local address"})

	f.sender.refuse = nil
	f.box.sealErr = errors.New("no key")
	long := secret + secret
	if _, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{Secret: &long}); err == nil || err.Error() != "no key" {
		t.Fatalf("update with a failing box: %v", err)
	}

	stored, err := f.svc.Get(ctx, admin, ep.ID)
	if err != nil || stored.URL != "https://hooks.example.com/in" || string(stored.SecretSealed) != "sealed:"+secret || !stored.UpdatedAt.Equal(t0) {
		t.Fatalf("a refused update changed the endpoint: %+v %v", stored, err)
	}
}

func TestDeleteEndpointTakesItsDeliveries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d := f.delivery(t, ep)

	apptest.WantKind(t, f.svc.Delete(ctx, member, ep.ID), domain.KindForbidden)
	apptest.WantKind(t, f.svc.Delete(ctx, other, ep.ID), domain.KindNotFound)
	if err := f.svc.Delete(ctx, admin, ep.ID); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Get(ctx, admin, ep.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.store.Deliveries().ByID(ctx, "team_1", d.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
	apptest.WantKind(t, f.svc.Delete(ctx, admin, ep.ID), domain.KindNotFound)
}

func TestGetAndListEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, url := range []string{"https://a.example.com", "https://b.example.com", "https://c.example.com"} {
		f.endpoint(t, url, "*")
	}
	ids := func(eps []webhook.Endpoint) []string {
		var out []string
		for _, e := range eps {
			out = append(out, e.ID)
		}
		return out
	}

	page, err := f.svc.List(ctx, admin, "", 2)
	if err != nil || !slices.Equal(ids(page.Items), []string{"whk_003", "whk_002"}) || page.NextCursor != "whk_002" {
		t.Fatalf("first page %v %q %v", ids(page.Items), page.NextCursor, err)
	}
	page, err = f.svc.List(ctx, admin, page.NextCursor, 2)
	if err != nil || !slices.Equal(ids(page.Items), []string{"whk_001"}) || page.NextCursor != "" {
		t.Fatalf("second page %v %q %v", ids(page.Items), page.NextCursor, err)
	}
	_, err = f.svc.List(ctx, admin, "dlv_001", 2)
	apptest.WantKind(t, err, domain.KindBadRequest)
	_, err = f.svc.List(ctx, member, "", 2)
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Get(ctx, member, "whk_001")
	apptest.WantKind(t, err, domain.KindForbidden)
	_, err = f.svc.Get(ctx, other, "whk_001")
	apptest.WantKind(t, err, domain.KindNotFound)
}

func TestSendATestEvent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "profile.created")

	cases := []struct {
		eventType string
		data      string
	}{
		{"profile.stopped", `{"profile":{"browser":"chromium","created_at":"2030-01-01T12:00:00Z","fingerprint_template":"Chrome on Windows (US)","id":"prf_sample","name":"Sample profile"},"reason":"released","session":{"expires_at":"2030-01-01T13:00:00Z","id":"ses_sample","launched_by":"usr_sample","started_at":"2030-01-01T12:00:00Z"}}`},
		{"proxy.assigned", `{"profile":{"browser":"chromium","created_at":"2030-01-01T12:00:00Z","fingerprint_template":"Chrome on Windows (US)","id":"prf_sample","name":"Sample profile"},"proxy":{"host":"proxy.example.com","id":"prx_sample","name":"Sample proxy","port":8080,"type":"http"}}`},
		{"proxy.failed", `{"error":"proxy authentication failed","proxy":{"host":"proxy.example.com","id":"prx_sample","name":"Sample proxy","port":8080,"type":"http"}}`},
		{"team.member_added", `{"member":{"email":"member@example.com","id":"mem_sample","role":"member"},"team":{"id":"team_1","name":"Sample team"}}`},
	}
	for i, c := range cases {
		id, err := f.svc.Test(ctx, admin, ep.ID, c.eventType)
		if err != nil {
			t.Fatalf("%s: %v", c.eventType, err)
		}
		// A test goes to the endpoint whatever it subscribed to.
		d := f.stored(t, id)
		if d.EndpointID != ep.ID || string(d.EventType) != c.eventType || d.Status != webhook.StatusPending || !d.NextAttemptAt.Equal(t0) {
			t.Fatalf("%s: delivery %+v", c.eventType, d)
		}
		var body struct {
			ID   string          `json:"id"`
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(d.Payload, &body); err != nil {
			t.Fatal(err)
		}
		if body.Type != c.eventType || body.ID != d.EventID || string(body.Data) != c.data {
			t.Fatalf("%s: payload %s", c.eventType, d.Payload)
		}
		if !f.woken() {
			t.Fatalf("%s: the dispatcher was not woken (case %d)", c.eventType, i)
		}
	}

	_, err := f.svc.Test(ctx, admin, ep.ID, "profile.exploded")
	wantFields(t, err, domain.FieldIssue{Field: "event_type", Issue: "must be one of the event types"})
	_, err = f.svc.Test(ctx, other, ep.ID, "profile.created")
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.Test(ctx, member, ep.ID, "profile.created")
	apptest.WantKind(t, err, domain.KindForbidden)
	if f.woken() {
		t.Fatal("a refused test woke the dispatcher")
	}
}

func TestListDeliveries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	f.delivery(t, ep)
	f.dispatchOnce() // dlv_001 succeeds; the others stay pending
	f.delivery(t, ep)
	f.delivery(t, ep)
	ids := func(ds []webhook.Delivery) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}

	page, err := f.svc.ListDeliveries(ctx, admin, ep.ID, "", "", 2)
	if err != nil || !slices.Equal(ids(page.Items), []string{"dlv_003", "dlv_002"}) || page.NextCursor != "dlv_002" {
		t.Fatalf("first page %v %q %v", ids(page.Items), page.NextCursor, err)
	}
	page, err = f.svc.ListDeliveries(ctx, admin, ep.ID, "", page.NextCursor, 2)
	if err != nil || !slices.Equal(ids(page.Items), []string{"dlv_001"}) {
		t.Fatalf("second page %v %v", ids(page.Items), err)
	}
	page, err = f.svc.ListDeliveries(ctx, admin, ep.ID, "succeeded", "", 10)
	if err != nil || !slices.Equal(ids(page.Items), []string{"dlv_001"}) {
		t.Fatalf("succeeded %v %v", ids(page.Items), err)
	}

	_, err = f.svc.ListDeliveries(ctx, admin, ep.ID, "lost", "", 10)
	apptest.WantKind(t, err, domain.KindBadRequest)
	_, err = f.svc.ListDeliveries(ctx, admin, ep.ID, "", "whk_001", 10)
	apptest.WantKind(t, err, domain.KindBadRequest)
	_, err = f.svc.ListDeliveries(ctx, other, ep.ID, "", "", 10)
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.ListDeliveries(ctx, member, ep.ID, "", "", 10)
	apptest.WantKind(t, err, domain.KindForbidden)
}

// failAll makes every attempt of the schedule on the deliveries due,
// answered by the sender's replies, so they end failed.
func (f *fixture) failAll() {
	for _, at := range []time.Duration{0, 5 * time.Second, 30 * time.Second} {
		f.clock.Set(t0.Add(at))
		f.dispatchOnce()
	}
}

func TestRetryRequeuesAFailedDelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t, reply{status: 500})
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d := f.delivery(t, ep)
	f.failAll()
	if got := f.stored(t, d.ID); got.Status != webhook.StatusFailed {
		t.Fatalf("delivery %s", got.Status)
	}
	f.woken() // by the finished attempts
	f.clock.Set(t0.Add(time.Hour))

	got, err := f.svc.Retry(ctx, admin, ep.ID, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != webhook.StatusPending || got.RoundStart != 3 || !got.NextAttemptAt.Equal(t0.Add(time.Hour)) || len(got.Attempts) != 3 {
		t.Fatalf("retried %+v", got)
	}
	if !f.woken() {
		t.Fatal("the dispatcher was not woken")
	}

	// A new round of the schedule: attempt 4 fails and is retried later.
	f.dispatchOnce()
	stored := f.stored(t, d.ID)
	if stored.Status != webhook.StatusPending || len(stored.Attempts) != 4 || !stored.NextAttemptAt.Equal(t0.Add(time.Hour+5*time.Second)) {
		t.Fatalf("after the retried attempt: %s %d attempts, next %s", stored.Status, len(stored.Attempts), stored.NextAttemptAt)
	}
	sent := f.sender.Sent()
	if n := sent[len(sent)-1].Headers["X-Service-Delivery-Attempt"]; n != "4" {
		t.Fatalf("attempt header %s", n)
	}
}

func TestRetryRefusesADeliveryThatIsNotFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	pending := f.delivery(t, ep)

	_, err := f.svc.Retry(ctx, admin, ep.ID, pending.ID)
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "only a failed delivery can be retried; this one is pending" {
		t.Fatalf("error %q", err)
	}
	f.dispatchOnce()
	f.woken() // by the finished attempt
	_, err = f.svc.Retry(ctx, admin, ep.ID, pending.ID)
	if err == nil || err.Error() != "only a failed delivery can be retried; this one is succeeded" {
		t.Fatalf("retry of a succeeded delivery: %v", err)
	}
	if f.woken() {
		t.Fatal("a refused retry woke the dispatcher")
	}

	second := f.endpoint(t, "https://hooks.example.com/other", "*")
	_, err = f.svc.Retry(ctx, admin, second.ID, pending.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.Retry(ctx, other, ep.ID, pending.ID)
	apptest.WantKind(t, err, domain.KindNotFound)
	_, err = f.svc.Retry(ctx, member, ep.ID, pending.ID)
	apptest.WantKind(t, err, domain.KindForbidden)
}

func TestRetryLosesToAConcurrentRetry(t *testing.T) {
	t.Parallel()
	f := newFixture(t, reply{status: 500})
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d, d2 := f.delivery(t, ep), f.delivery(t, ep)
	f.failAll()
	f.woken()
	inner := f.deps.Deliveries
	f.deps.Deliveries = &requeueHook{Deliveries: inner, fn: func(ctx context.Context, next webhook.Delivery) (bool, error) {
		// Another admin's retry commits first.
		if ok, err := inner.Requeue(ctx, next); !ok || err != nil {
			t.Errorf("concurrent retry: %v %v", ok, err)
		}
		return inner.Requeue(ctx, next)
	}}
	f.build()

	_, err := f.svc.Retry(ctx, admin, ep.ID, d.ID)
	apptest.WantKind(t, err, domain.KindConflict)
	if err.Error() != "the delivery is no longer failed" {
		t.Fatalf("error %q", err)
	}

	f.deps.Deliveries = &requeueHook{Deliveries: inner, fn: func(context.Context, webhook.Delivery) (bool, error) {
		return false, errors.New("deliveries: read-only transaction")
	}}
	f.build()
	if _, err := f.svc.Retry(ctx, admin, ep.ID, d2.ID); err == nil || err.Error() != "deliveries: read-only transaction" {
		t.Fatalf("retry with a failing store: %v", err)
	}
	if f.woken() {
		t.Fatal("a retry that did not happen woke the dispatcher")
	}
}

func TestNewFillsInThePolicyDefaults(t *testing.T) {
	t.Parallel()
	s := New(Deps{IDs: apptest.NewPrefixIDs()})

	p := s.d.Policy
	if p.LeaseTTL != time.Minute || p.Workers != 64 || p.PerTeam != 32 || p.PollInterval != time.Second {
		t.Fatalf("policy %+v", p)
	}
	if s.d.Waker == nil || s.owner != "dsp_001" {
		t.Fatalf("waker %v, owner %q", s.d.Waker, s.owner)
	}
}
