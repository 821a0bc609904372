package webhooks

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"github.com/profilesvc/profilesvc/tests/poll"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

const payload001 = `{"id":"evt_001","type":"profile.created","created_at":"2030-01-01T12:00:00Z","data":{"profile":{"id":"prf_1"}}}`

// signature001 is the HMAC-SHA256 of payload001 under secret.
const signature001 = "ec57cf7aeca5e0882924c29ba40d1d81283090700a7eb48b78b77570d4fa1d6f"

func wantAttempts(t *testing.T, got []webhook.Attempt, want ...webhook.Attempt) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("attempts\n got %+v\nwant %+v", got, want)
	}
}

func wantStrings(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s %q, want %q", what, got, want)
	}
}

func TestSign(t *testing.T) {
	t.Parallel()
	// RFC 4231, test case 2.
	if got := Sign([]byte("Jefe"), []byte("what do ya want for nothing?")); got != "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Fatalf("signature %s", got)
	}
}

func TestSignStandard(t *testing.T) {
	t.Parallel()
	// The test vector of the Standard Webhooks specification, whose secret
	// is the base64 of the key.
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := SignStandard(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature %s", got)
	}
}

func TestDispatcherSendsASignedDelivery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d := f.delivery(t, ep)

	f.dispatchOnce()

	sent := f.sender.Sent()
	if len(sent) != 1 {
		t.Fatalf("%d requests", len(sent))
	}
	if sent[0].URL != "https://hooks.example.com/in" || string(sent[0].Body) != payload001 {
		t.Fatalf("request %s %s", sent[0].URL, sent[0].Body)
	}
	want := map[string]string{
		"Content-Type":               "application/json",
		"X-Service-Signature":        signature001,
		"X-Service-Event-Id":         "evt_001",
		"X-Service-Event-Type":       "profile.created",
		"X-Service-Delivery-Attempt": "1",
		"webhook-id":                 "evt_001",
		"webhook-timestamp":          strconv.FormatInt(t0.Unix(), 10),
		"webhook-signature":          standardSignature(t, "evt_001", t0, payload001),
	}
	if !maps.Equal(sent[0].Headers, want) {
		t.Fatalf("headers %v", sent[0].Headers)
	}
	got := f.stored(t, d.ID)
	if got.Status != webhook.StatusSucceeded {
		t.Fatalf("status %s", got.Status)
	}
	wantAttempts(t, got.Attempts, webhook.Attempt{N: 1, At: t0, StatusCode: 200, LatencyMs: 42})
	wantStrings(t, "outcomes", f.metrics.Outcomes(), "succeeded")
}

func TestDispatcherDoesNotAttemptADeliveryTwiceWhileItIsInFlight(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	f := newFixture(t, reply{status: 200, hold: gate})
	var claimed [][]string
	inner := f.deps.Deliveries
	f.deps.Deliveries = &claimHook{Deliveries: inner, fn: func(ctx context.Context, _ int, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		ds, err := inner.Claim(ctx, c)
		var ids []string
		for _, d := range ds {
			ids = append(ids, d.ID)
		}
		claimed = append(claimed, ids)
		return ds, err
	}}
	f.build()
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))
	disp := f.dispatcher()

	f.claim(disp)
	f.sender.arrived(t)
	// The attempt outlasts its lease (a slow receiver, a clock that
	// jumped): the same process claims the delivery again.
	f.clock.Advance(2 * time.Minute)
	f.claim(disp)
	close(gate)
	disp.wg.Wait()

	if !slices.EqualFunc(claimed, [][]string{{"dlv_001"}, {"dlv_001"}}, slices.Equal) {
		t.Fatalf("claims %q", claimed)
	}
	if n := len(f.sender.Sent()); n != 1 {
		t.Fatalf("%d requests for one delivery", n)
	}
	got := f.stored(t, d.ID)
	if got.Status != webhook.StatusSucceeded || len(got.Attempts) != 1 {
		t.Fatalf("delivery %s with %d attempts", got.Status, len(got.Attempts))
	}
	wantStrings(t, "outcomes", f.metrics.Outcomes(), "succeeded")
	if n := len(disp.flight.deliveries); n != 0 {
		t.Fatalf("%d still in flight", n)
	}
}

func TestDispatcherReadsEachEndpointOncePerClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	inner := f.deps.Endpoints
	reads := &endpointReads{Endpoints: inner, fn: inner.ByID}
	f.deps.Endpoints = reads
	f.build()
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	f.delivery(t, ep)
	f.delivery(t, ep)

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 2 {
		t.Fatalf("%d requests", n)
	}
	if n := reads.calls.Load(); n != 1 {
		t.Fatalf("%d endpoint reads", n)
	}
}

func TestDispatcherPerEndpointBound(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	f := newFixture(t, reply{status: 200, hold: gate})
	two := 2
	ep, err := f.svc.Create(ctx, admin, CreateInput{URL: "https://hooks.example.com/in", Events: []string{"*"}, Secret: secret, MaxInFlight: &two})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		f.delivery(t, ep)
	}
	disp := f.dispatcher()

	f.claim(disp)
	f.sender.arrived(t)
	f.sender.arrived(t)
	// Two in flight to the endpoint: a second claim leaves the third alone.
	f.claim(disp)
	close(gate)
	disp.wg.Wait()

	if n := len(f.sender.Sent()); n != 2 {
		t.Fatalf("%d requests, want the endpoint's bound of 2", n)
	}
	if got := f.stored(t, "dlv_003"); got.Status != webhook.StatusPending || len(got.Attempts) != 0 {
		t.Fatalf("third delivery %s with %d attempts", got.Status, len(got.Attempts))
	}
}

func TestDispatcherSkipsAnEndpointDeletedAfterTheClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	inner := f.deps.Deliveries
	f.deps.Deliveries = &claimHook{Deliveries: inner, fn: func(ctx context.Context, _ int, c webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		ds, err := inner.Claim(ctx, c)
		if derr := f.store.WebhookEndpoints().Delete(ctx, "team_1", "whk_001"); derr != nil {
			t.Errorf("delete endpoint: %v", derr)
		}
		return ds, err
	}}
	f.build()
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("%d requests to a deleted endpoint", n)
	}
	if _, err := f.store.Deliveries().ByID(ctx, "team_1", d.ID); !domain.IsKind(err, domain.KindNotFound) {
		t.Fatalf("delivery of a deleted endpoint: %v", err)
	}
	wantStrings(t, "outcomes", f.metrics.Outcomes())
	wantStrings(t, "logs", f.logs.Lines())
}

func TestDispatcherLeavesTheLeaseToLapseWhenTheEndpointCannotBeRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d := f.delivery(t, ep)
	working := f.deps.Endpoints
	f.deps.Endpoints = &endpointReads{Endpoints: working, fn: func(context.Context, string, string) (webhook.Endpoint, error) {
		return webhook.Endpoint{}, errors.New("endpoints: timeout")
	}}
	f.build()

	f.dispatchOnce()
	wantStrings(t, "logs", f.logs.Lines(), "ERROR webhook attempt: read endpoint delivery_id=dlv_001 error=endpoints: timeout")
	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("%d requests", n)
	}

	// Once the lease has lapsed another dispatcher delivers it.
	f.deps.Endpoints = working
	f.build()
	f.dispatchOnce()
	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("claimed while the lease held: %d requests", n)
	}
	f.clock.Advance(time.Minute)
	f.dispatchOnce()
	if got := f.stored(t, d.ID); got.Status != webhook.StatusSucceeded || len(f.sender.Sent()) != 1 {
		t.Fatalf("delivery %s after %d requests", got.Status, len(f.sender.Sent()))
	}
}

func TestDispatcherRecordsADisabledEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ep := f.endpoint(t, "https://hooks.example.com/in", "*")
	d := f.delivery(t, ep)
	off := false
	if _, err := f.svc.Update(ctx, admin, ep.ID, UpdateInput{Enabled: &off}); err != nil {
		t.Fatal(err)
	}

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("%d requests to a disabled endpoint", n)
	}
	got := f.stored(t, d.ID)
	wantAttempts(t, got.Attempts, webhook.Attempt{N: 1, At: t0, Error: "endpoint is disabled"})
	if got.Status != webhook.StatusPending || !got.NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("delivery %s next at %s", got.Status, got.NextAttemptAt)
	}
	wantStrings(t, "outcomes", f.metrics.Outcomes(), "retry")
}

func TestDispatcherRecordsAnUnreadableSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))
	f.box.openErr = errors.New("key was rotated")

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("%d requests without a signature", n)
	}
	wantAttempts(t, f.stored(t, d.ID).Attempts, webhook.Attempt{N: 1, At: t0, Error: "endpoint secret cannot be read"})
	wantStrings(t, "logs", f.logs.Lines(), "ERROR webhook attempt: open secret delivery_id=dlv_001 endpoint_id=whk_001 event_id=evt_001 error=key was rotated",
		"WARN webhook attempt failed team_id=team_1 delivery_id=dlv_001 endpoint_id=whk_001 event_id=evt_001 attempt=1 status_code=0 error=endpoint secret cannot be read next_attempt_at=2030-01-01 12:00:05 +0000 UTC")
}

func TestDispatcherWhenTheCompletionFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Deliveries = &completeHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, string, ...webhook.Delivery) ([]bool, error) {
		return nil, errors.New("write conflict")
	}}
	f.build()
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 1 {
		t.Fatalf("%d requests", n)
	}
	wantStrings(t, "logs", f.logs.Lines(), "ERROR webhook attempt: record team_id=team_1 delivery_id=dlv_001 endpoint_id=whk_001 event_id=evt_001 error=write conflict")
	wantStrings(t, "outcomes", f.metrics.Outcomes())
	if got := f.stored(t, d.ID); got.Status != webhook.StatusPending || len(got.Attempts) != 0 {
		t.Fatalf("delivery %s with %d attempts", got.Status, len(got.Attempts))
	}
}

func TestDispatcherAttemptThatOutlivesItsLease(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	f := newFixture(t, reply{status: 200, hold: gate})
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))
	disp := f.dispatcher()

	f.claim(disp)
	f.sender.arrived(t)
	f.clock.Advance(2 * time.Minute)
	now := f.clock.Now()
	taken, err := f.store.Deliveries().Claim(ctx, webhookstore.DeliveryClaim{Owner: "dsp_other", Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10})
	if err != nil || len(taken) != 1 {
		t.Fatalf("other dispatcher's claim: %v %v", taken, err)
	}
	close(gate)
	disp.wg.Wait()

	wantStrings(t, "logs", f.logs.Lines(), "WARN webhook attempt outlived its lease; another dispatcher took the delivery team_id=team_1 delivery_id=dlv_001 endpoint_id=whk_001 event_id=evt_001")
	wantStrings(t, "outcomes", f.metrics.Outcomes())
	// The other dispatcher's attempt is the one that records.
	if got := f.stored(t, d.ID); got.Status != webhook.StatusPending || len(got.Attempts) != 0 {
		t.Fatalf("delivery %s with %d attempts", got.Status, len(got.Attempts))
	}
}

func TestDispatcherRetriesOnTheScheduleThenFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t, reply{status: 500}, reply{err: errors.New("dial tcp: connection refused")}, reply{status: 503})
	d := f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))

	f.dispatchOnce()
	got := f.stored(t, d.ID)
	wantAttempts(t, got.Attempts, webhook.Attempt{N: 1, At: t0, StatusCode: 500, LatencyMs: 42})
	if got.Status != webhook.StatusPending || !got.NextAttemptAt.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after a 500: %s next at %s", got.Status, got.NextAttemptAt)
	}

	f.clock.Set(t0.Add(4 * time.Second))
	f.dispatchOnce()
	if n := len(f.sender.Sent()); n != 1 {
		t.Fatalf("attempted before it was due: %d requests", n)
	}

	f.clock.Set(t0.Add(5 * time.Second))
	f.dispatchOnce()
	got = f.stored(t, d.ID)
	if a := got.Attempts[1]; a.N != 2 || a.StatusCode != 0 || a.Error != "dial tcp: connection refused" || !a.At.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("second attempt %+v", a)
	}
	if got.Status != webhook.StatusPending || !got.NextAttemptAt.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("after an error: %s next at %s", got.Status, got.NextAttemptAt)
	}

	f.clock.Set(t0.Add(30 * time.Second))
	f.dispatchOnce()
	got = f.stored(t, d.ID)
	if got.Status != webhook.StatusFailed || len(got.Attempts) != 3 || got.Attempts[2].StatusCode != 503 {
		t.Fatalf("after the last attempt: %s %+v", got.Status, got.Attempts)
	}
	f.clock.Advance(time.Hour)
	f.dispatchOnce()

	var numbers, signatures, ids, timestamps, standard []string
	for _, r := range f.sender.Sent() {
		numbers = append(numbers, r.Headers["X-Service-Delivery-Attempt"])
		signatures = append(signatures, r.Headers["X-Service-Signature"])
		ids = append(ids, r.Headers["webhook-id"])
		timestamps = append(timestamps, r.Headers["webhook-timestamp"])
		standard = append(standard, r.Headers["webhook-signature"])
	}
	wantStrings(t, "attempt numbers", numbers, "1", "2", "3")
	wantStrings(t, "signatures", signatures, signature001, signature001, signature001)
	// Standard Webhooks: one id for every attempt, each attempt signed at
	// its own time.
	wantStrings(t, "webhook-id", ids, "evt_001", "evt_001", "evt_001")
	var at []time.Time
	for _, ts := range timestamps {
		sec, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			t.Fatalf("webhook-timestamp %q", ts)
		}
		at = append(at, time.Unix(sec, 0))
	}
	if len(at) != 3 || !at[0].Before(at[1]) || !at[1].Before(at[2]) {
		t.Fatalf("webhook-timestamp %q: want one per attempt, rising", timestamps)
	}
	for i := range at {
		if want := standardSignature(t, "evt_001", at[i], payload001); standard[i] != want {
			t.Fatalf("attempt %d: webhook-signature %s, want %s", i+1, standard[i], want)
		}
	}
	wantStrings(t, "outcomes", f.metrics.Outcomes(), "retry", "retry", "failed")
}

func TestDispatcherWhenTheClaimFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Deliveries = &claimHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, int, webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		return nil, errors.New("deliveries: too many connections")
	}}
	f.build()
	f.delivery(t, f.endpoint(t, "https://hooks.example.com/in", "*"))

	f.dispatchOnce()

	if n := len(f.sender.Sent()); n != 0 {
		t.Fatalf("%d requests", n)
	}
	wantStrings(t, "logs", f.logs.Lines(), "ERROR webhook claim error=deliveries: too many connections")
}

func TestDispatcherClaimsNothingWithoutAFreeWorker(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hook := &claimHook{Deliveries: f.deps.Deliveries, fn: func(context.Context, int, webhookstore.DeliveryClaim) ([]webhook.Delivery, error) {
		return nil, nil
	}}
	f.deps.Deliveries = hook
	f.build()
	disp := f.dispatcher()
	for range cap(disp.slots) {
		disp.slots <- struct{}{}
	}

	f.claim(disp)

	if n := hook.calls.Load(); n != 0 {
		t.Fatalf("%d claims with every worker busy", n)
	}
}

// blackholeSender holds every request to a "blackhole" host until gate
// closes, as a receiver that never answers holds an attempt until its
// time-out; the rest go to the fake sender.
type blackholeSender struct {
	*fakeSender
	gate chan struct{}
}

func (s blackholeSender) Send(ctx context.Context, r ports.WebhookRequest) (ports.WebhookResponse, error) {
	if !strings.Contains(r.URL, "blackhole") {
		return s.fakeSender.Send(ctx, r)
	}
	<-s.gate
	return ports.WebhookResponse{}, errors.New("timeout after 5s")
}

// One team's receivers that never answer take at most the team's share of
// the workers: another team's delivery, due later, is attempted while all
// of them hang.
func TestDispatcherBlackholedTeamDoesNotStopAnother(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	gate := make(chan struct{})
	defer close(gate)
	f.deps.Sender = blackholeSender{fakeSender: f.sender, gate: gate}
	f.deps.Policy.PerTeam = 2
	f.build()
	for i := range 4 {
		ep := f.endpoint(t, "https://blackhole"+strconv.Itoa(i)+".example.com/in", "*")
		f.delivery(t, ep)
		f.delivery(t, ep)
	}
	elsewhere, err := f.svc.Create(ctx, other, CreateInput{URL: "https://hooks.example.com/other", Events: []string{"*"}, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	d := f.delivery(t, elsewhere)

	disp := f.dispatcher()
	f.claim(disp)
	f.claim(disp)

	poll.Until(t, "the other team's delivery to succeed", func() bool {
		got, err := f.store.Deliveries().ByID(ctx, elsewhere.TeamID, d.ID)
		return err == nil && got.Status == webhook.StatusSucceeded
	})
}

// Due work this pass could not start (workers busy, a team or endpoint at
// its bound) waits for a wake-up or the poll, never a millisecond spin on
// the store; work due later is waited for until it is due.
func TestDispatcherIdlesUntilWokenWhenDueWorkIsHeldBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.deps.Policy.PollInterval = time.Minute
	f.build()
	for _, c := range []struct {
		until, want time.Duration
	}{
		{-time.Second, time.Minute},
		{0, time.Minute},
		{5 * time.Second, 5 * time.Second},
		{time.Hour, time.Minute},
	} {
		if got := f.svc.idle(c.until); got != c.want {
			t.Errorf("idle with work due in %v = %v, want %v", c.until, got, c.want)
		}
	}
}

// standardSignature is the webhook-signature that the Standard Webhooks
// reference library makes of payload sent as id at at, keyed with the
// endpoint's secret as it is.
func standardSignature(t *testing.T, id string, at time.Time, payload string) string {
	t.Helper()
	wh, err := standardwebhooks.NewWebhookRaw([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}
