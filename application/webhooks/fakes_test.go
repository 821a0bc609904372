package webhooks

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/store/memory"
	"github.com/profilesvc/profilesvc/application/apptest"
	"github.com/profilesvc/profilesvc/application/unit"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

var (
	ctx = context.Background()
	t0  = time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)

	admin  = team.Actor{UserID: "usr_admin", TeamID: "team_1", MemberID: "mem_admin", Role: team.RoleAdmin}
	member = team.Actor{UserID: "usr_member", TeamID: "team_1", MemberID: "mem_member", Role: team.RoleMember}
	// other administers team_2, where team_1's endpoints do not exist.
	other = team.Actor{UserID: "usr_other", TeamID: "team_2", MemberID: "mem_other", Role: team.RoleOwner}
)

const secret = "0123456789abcdef0123456789abcdef"

// reply is one answer of the fake sender.
type reply struct {
	status int
	err    error
	// hold, when set, keeps Send from answering until it is closed.
	hold chan struct{}
}

// fakeSender answers Send with replies in order (the last one repeats),
// records every request, and reports each on sending as it arrives.
// CheckTarget refuses every URL with refuse when it is set.
type fakeSender struct {
	mu      sync.Mutex
	replies []reply
	sent    []ports.WebhookRequest
	checked []string
	refuse  error
	sending chan ports.WebhookRequest
}

func newSender(replies ...reply) *fakeSender {
	return &fakeSender{replies: replies, sending: make(chan ports.WebhookRequest, 16)}
}

func (s *fakeSender) Send(_ context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	s.mu.Lock()
	s.sent = append(s.sent, r)
	rep := s.replies[min(len(s.sent), len(s.replies))-1]
	s.mu.Unlock()
	s.sending <- r
	if rep.hold != nil {
		<-rep.hold
	}
	if rep.err != nil {
		return ports.WebhookResponse{}, rep.err
	}
	return ports.WebhookResponse{StatusCode: rep.status, Latency: 42 * time.Millisecond}, nil
}

func (s *fakeSender) CheckTarget(_ context.Context, rawURL string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked = append(s.checked, rawURL)
	return s.refuse
}

func (s *fakeSender) Sent() []ports.WebhookRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ports.WebhookRequest(nil), s.sent...)
}

func (s *fakeSender) Checked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.checked...)
}

// arrived waits for the next request to reach the sender.
func (s *fakeSender) arrived(t *testing.T) ports.WebhookRequest {
	t.Helper()
	select {
	case r := <-s.sending:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the sender")
		return ports.WebhookRequest{}
	}
}

// fakeBox seals by prefixing "sealed:"; sealErr and openErr make it fail.
type fakeBox struct {
	sealErr error
	openErr error
}

func (b *fakeBox) Seal(p []byte) ([]byte, error) {
	if b.sealErr != nil {
		return nil, b.sealErr
	}
	return append([]byte("sealed:"), p...), nil
}

func (b *fakeBox) Open(sealed []byte) ([]byte, error) {
	if b.openErr != nil {
		return nil, b.openErr
	}
	p, ok := bytes.CutPrefix(sealed, []byte("sealed:"))
	if !ok {
		return nil, errors.New("not sealed by this box")
	}
	return p, nil
}

// fakeMetrics records the outcome of every counted attempt.
type fakeMetrics struct {
	mu       sync.Mutex
	outcomes []string
	oldest   []time.Duration
}

func (m *fakeMetrics) Attempt(outcome string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.outcomes = append(m.outcomes, outcome)
}

func (m *fakeMetrics) OldestPending(age time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.oldest = append(m.oldest, age)
}

func (m *fakeMetrics) Outcomes() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.outcomes...)
}

func (m *fakeMetrics) Oldest() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.oldest...)
}

// claimHook stands in for Claim: fn gets the call's number (from 1), so it
// can fail, pass the call on, or change rows around it.
type claimHook struct {
	webhookstore.Deliveries
	calls atomic.Int32
	fn    func(ctx context.Context, n int, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error)
}

func (h *claimHook) Claim(ctx context.Context, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
	return h.fn(ctx, int(h.calls.Add(1)), c)
}

// completeHook stands in for Complete.
type completeHook struct {
	webhookstore.Deliveries
	fn func(ctx context.Context, owner string, ds ...webhook.Delivery) ([]bool, error)
}

func (h *completeHook) Complete(ctx context.Context, owner string, ds ...webhook.Delivery) ([]bool, error) {
	return h.fn(ctx, owner, ds...)
}

// requeueHook stands in for Requeue.
type requeueHook struct {
	webhookstore.Deliveries
	fn func(ctx context.Context, d webhook.Delivery) (bool, error)
}

func (h *requeueHook) Requeue(ctx context.Context, d webhook.Delivery) (bool, error) {
	return h.fn(ctx, d)
}

// endpointReads stands in for Endpoints.ByID and counts the reads.
type endpointReads struct {
	webhookstore.Endpoints
	calls atomic.Int32
	fn    func(ctx context.Context, teamID, id string) (webhook.Endpoint, error)
}

func (h *endpointReads) ByID(ctx context.Context, teamID, id string) (webhook.Endpoint, error) {
	h.calls.Add(1)
	return h.fn(ctx, teamID, id)
}

// enabledHook stands in for Endpoints.ListEnabled.
type enabledHook struct {
	webhookstore.Endpoints
	fn func(ctx context.Context, teamID string) ([]webhook.Endpoint, error)
}

func (h *enabledHook) ListEnabled(ctx context.Context, teamID string) ([]webhook.Endpoint, error) {
	return h.fn(ctx, teamID)
}

// fixture is a webhook service over the memory store with a fake clock,
// sender, box and metrics; tests swap single ports of deps before build.
type fixture struct {
	t       *testing.T
	store   *memory.Store
	clock   *clock.Fake
	sender  *fakeSender
	box     *fakeBox
	metrics *fakeMetrics
	logs    *apptest.Logs
	deps    Deps
	svc     *Service
}

func newFixture(t *testing.T, replies ...reply) *fixture {
	t.Helper()
	if len(replies) == 0 {
		replies = []reply{{status: 200}}
	}
	st := memory.New()
	apptest.Seed(t, st.Users(), st.Teams(), t0)
	f := &fixture{t: t, store: st, clock: clock.NewFake(t0), sender: newSender(replies...), box: &fakeBox{}, metrics: &fakeMetrics{}, logs: &apptest.Logs{}}
	f.deps = Deps{
		Tx: unit.New(st, nil), Teams: st.Teams(), Endpoints: st.WebhookEndpoints(), Deliveries: st.Deliveries(), Outbox: st.Outbox(),
		Sender: f.sender, Box: f.box, Metrics: f.metrics, Clock: f.clock, IDs: apptest.NewPrefixIDs(),
		Log: f.logs.Logger(),
		Policy: Policy{
			Schedule: webhook.Schedule{0, 5 * time.Second, 25 * time.Second},
			LeaseTTL: time.Minute, Workers: 4, PerTeam: 4, PollInterval: 20 * time.Millisecond,
		},
	}
	f.build()
	return f
}

func (f *fixture) build() { f.svc = New(f.deps) }

// endpoint creates an enabled endpoint of team_1 taking events.
func (f *fixture) endpoint(t *testing.T, url string, events ...string) webhook.Endpoint {
	t.Helper()
	ep, err := f.svc.Create(ctx, admin, CreateInput{URL: url, Events: events, Secret: secret})
	if err != nil {
		t.Fatalf("create endpoint %s: %v", url, err)
	}
	return ep
}

// delivery stores a pending delivery to ep of a profile.created event,
// due now.
func (f *fixture) delivery(t *testing.T, ep webhook.Endpoint) webhook.Delivery {
	t.Helper()
	e := event.Event{ID: f.deps.IDs.New("evt"), TeamID: ep.TeamID, Type: event.ProfileCreated, OccurredAt: t0, Data: []byte(`{"profile":{"id":"prf_1"}}`)}
	payload, err := webhook.Payload(e)
	if err != nil {
		t.Fatal(err)
	}
	d := webhook.NewDelivery(f.deps.IDs.New("dlv"), ep, e, payload, f.deps.Policy.Schedule, f.clock.Now())
	if err := f.store.Deliveries().Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// deliveries queues n deliveries to ep, as delivery does.
func (f *fixture) deliveries(t *testing.T, ep webhook.Endpoint, n int) []webhook.Delivery {
	t.Helper()
	ds := make([]webhook.Delivery, n)
	for i := range ds {
		ds[i] = f.delivery(t, ep)
	}
	return ds
}

// stored reads a delivery of team_1 straight from the store.
func (f *fixture) stored(t *testing.T, id string) webhook.Delivery {
	t.Helper()
	d, err := f.store.Deliveries().ByID(ctx, "team_1", id)
	if err != nil {
		t.Fatalf("read %s: %v", id, err)
	}
	return d
}

// dispatcher returns the state Run keeps between claims, so a test can
// drive claims one at a time; its recorder stops with the test.
func (f *fixture) dispatcher() *run {
	r := f.svc.newRun()
	f.t.Cleanup(r.stop)
	return r
}

// claim claims due deliveries and starts their attempts.
func (f *fixture) claim(r *run) { f.svc.claimAndStart(ctx, r) }

// dispatchOnce claims and waits for the attempts it started.
func (f *fixture) dispatchOnce() {
	d := f.dispatcher()
	f.claim(d)
	d.wg.Wait()
}
