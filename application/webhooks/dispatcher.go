package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// Waker wakes the dispatcher when there may be work: an event committed, a
// test or retry queued, an attempt finished. Wakes while it is busy
// collapse into one.
type Waker struct {
	ch chan struct{}
	// events is set when events were committed since the last fan-out, so
	// wake-ups for other reasons (an attempt finished) skip the fan-out
	// transaction.
	events atomic.Bool
}

// NewWaker returns a waker.
func NewWaker() *Waker { return &Waker{ch: make(chan struct{}, 1)} }

// EventsCommitted wakes the dispatcher to fan out new events.
func (w *Waker) EventsCommitted() {
	w.events.Store(true)
	w.Wake()
}

// Wake signals the dispatcher without blocking.
func (w *Waker) Wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Run fans out and delivers until ctx ends, then waits for the attempts in
// flight. Every instance runs it: claims and leases share the work.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	flight := newInFlight()
	slots := make(chan struct{}, s.d.Policy.Workers)
	// The first pass and every poll fan out whatever other instances (or
	// a previous run) left; in between, only committed events need it.
	fanOut := true
	for ctx.Err() == nil {
		if fanOut || s.d.Waker.events.Swap(false) {
			if err := s.fanOutAll(ctx); err != nil && ctx.Err() == nil {
				s.d.Log.ErrorContext(ctx, "webhook fan-out", "error", err.Error())
			}
		}
		fanOut = false
		s.claimAndStart(ctx, &wg, flight, slots)
		wait := s.d.Policy.PollInterval
		if next, oldest, ok, err := s.d.Deliveries.Pending(ctx); err == nil {
			now := s.d.Clock.Now()
			if ok {
				s.d.Metrics.OldestPending(now.Sub(oldest))
				wait = s.idle(next.Sub(now))
			} else {
				s.d.Metrics.OldestPending(0)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.d.Waker.ch:
		case <-timer.C:
			fanOut = true
		}
		timer.Stop()
	}
}

// idle is how long the loop sleeps, unless woken, when the earliest
// pending delivery is due in until. Work due later shortens the sleep to
// its time. Work due already does not: this pass has just claimed what it
// could, so what is left is held back by busy workers, a team or endpoint
// at its bound, or another instance's lease. An attempt that finishes
// wakes the loop, and a lapsed lease is seen at the next poll; polling the
// store every millisecond until then would keep a database connection
// busy, which on SQLite (one connection) every request waits for.
func (s *Service) idle(until time.Duration) time.Duration {
	if until <= 0 {
		return s.d.Policy.PollInterval
	}
	return min(until, s.d.Policy.PollInterval)
}

// fanOutAll turns committed outbox events into deliveries until none is
// left.
func (s *Service) fanOutAll(ctx context.Context) error {
	for {
		n, err := s.FanOut(ctx)
		if err != nil || n < s.d.Policy.FanOutBatch {
			return err
		}
	}
}

// FanOut takes one batch of undispatched outbox events and, in the same
// transaction, creates one delivery per enabled endpoint of the event's
// team that takes it (created before the event was committed, subscribed
// to its type), and marks the events dispatched. A crash before the
// commit leaves the events for the next fan-out; nothing is lost or
// doubled.
func (s *Service) FanOut(ctx context.Context) (int, error) {
	n := 0
	err := s.d.Tx.Do(ctx, func(ctx context.Context) error {
		events, err := s.d.Outbox.ClaimUndispatched(ctx, s.d.Policy.FanOutBatch)
		if err != nil || len(events) == 0 {
			return err
		}
		n = len(events)
		now := s.d.Clock.Now().UTC()
		endpoints := map[string][]webhook.Endpoint{}
		ids := make([]string, 0, len(events))
		for _, e := range events {
			ids = append(ids, e.ID)
			eps, seen := endpoints[e.TeamID]
			if !seen {
				if eps, err = s.d.Endpoints.ListEnabled(ctx, e.TeamID); err != nil {
					return err
				}
				endpoints[e.TeamID] = eps
			}
			var payload []byte
			for _, ep := range eps {
				if !ep.Takes(e) {
					continue
				}
				if payload == nil {
					if payload, err = webhook.Payload(e); err != nil {
						return err
					}
				}
				d := webhook.NewDelivery(s.d.IDs.New("dlv"), ep, e, payload, s.d.Policy.Schedule, now)
				if err := s.d.Deliveries.Create(ctx, d); err != nil {
					return err
				}
			}
		}
		return s.d.Outbox.MarkDispatched(ctx, ids, now)
	})
	return n, err
}

// inFlight is what this process is attempting: how many per endpoint and
// per team, and which deliveries.
type inFlight struct {
	mu          sync.Mutex
	perEndpoint map[string]int
	perTeam     map[string]int
	deliveries  map[string]bool
}

func newInFlight() *inFlight {
	return &inFlight{perEndpoint: map[string]int{}, perTeam: map[string]int{}, deliveries: map[string]bool{}}
}

// busy lists the endpoints with limit attempts or more in flight.
func (f *inFlight) busy(limit int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return atLimit(f.perEndpoint, limit)
}

// busyTeams lists the teams with limit attempts or more in flight.
func (f *inFlight) busyTeams(limit int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return atLimit(f.perTeam, limit)
}

func atLimit(counts map[string]int, limit int) []string {
	var out []string
	for id, n := range counts {
		if n >= limit {
			out = append(out, id)
		}
	}
	return out
}

// start records an attempt of d, unless d is being attempted already: its
// lease lapsed under a clock that jumped (or a very slow attempt), and the
// attempt in flight will record its outcome; a second would double it.
func (f *inFlight) start(d webhook.Delivery) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deliveries[d.ID] {
		return false
	}
	f.deliveries[d.ID] = true
	f.perEndpoint[d.EndpointID]++
	f.perTeam[d.TeamID]++
	return true
}

func (f *inFlight) done(d webhook.Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.deliveries, d.ID)
	if f.perEndpoint[d.EndpointID]--; f.perEndpoint[d.EndpointID] <= 0 {
		delete(f.perEndpoint, d.EndpointID)
	}
	if f.perTeam[d.TeamID]--; f.perTeam[d.TeamID] <= 0 {
		delete(f.perTeam, d.TeamID)
	}
}

// claimAndStart claims as many due deliveries as there are free workers
// and starts an attempt for each.
func (s *Service) claimAndStart(ctx context.Context, wg *sync.WaitGroup, flight *inFlight, slots chan struct{}) {
	free := cap(slots) - len(slots)
	if free == 0 {
		return
	}
	now := s.d.Clock.Now()
	claimed, err := s.d.Deliveries.Claim(ctx, webhookstore.DeliveryClaim{
		Owner: s.owner, Now: now, LeaseUntil: now.Add(s.d.Policy.LeaseTTL),
		Limit: free, PerEndpoint: s.d.Policy.PerEndpoint, ExcludeEndpoints: flight.busy(s.d.Policy.PerEndpoint),
		PerTeam: s.d.Policy.PerTeam, ExcludeTeams: flight.busyTeams(s.d.Policy.PerTeam),
	})
	if err != nil {
		if ctx.Err() == nil {
			s.d.Log.ErrorContext(ctx, "webhook claim", "error", err.Error())
		}
		return
	}
	// A claim holds at most PerEndpoint deliveries of an endpoint: read
	// each endpoint once for all of them.
	endpoints := map[string]webhook.Endpoint{}
	for _, d := range claimed {
		ep, seen := endpoints[d.EndpointID]
		if !seen {
			ep, err = s.d.Endpoints.ByID(ctx, d.TeamID, d.EndpointID)
			if domain.IsKind(err, domain.KindNotFound) {
				continue // deleted with its deliveries
			}
			if err != nil {
				// The lease lapses and the delivery is claimed again.
				s.d.Log.ErrorContext(ctx, "webhook attempt: read endpoint", "delivery_id", d.ID, "error", err.Error())
				continue
			}
			endpoints[d.EndpointID] = ep
		}
		if !flight.start(d) {
			continue
		}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() {
				flight.done(d)
				<-slots
				s.d.Waker.Wake()
			}()
			s.attempt(context.WithoutCancel(ctx), d, ep)
		})
	}
}

// Sign is the X-Service-Signature of body: hex HMAC-SHA256 keyed with the
// endpoint's secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// attempt makes one attempt of d to ep and records it.
func (s *Service) attempt(ctx context.Context, d webhook.Delivery, ep webhook.Endpoint) {
	log := s.d.Log.With("delivery_id", d.ID, "endpoint_id", d.EndpointID, "event_id", d.EventID)
	a := webhook.Attempt{At: s.d.Clock.Now().UTC()}
	var resp ports.WebhookResponse
	if !ep.Enabled {
		a.Error = "endpoint is disabled"
	} else if secret, err := s.d.Box.Open(ep.SecretSealed); err != nil {
		a.Error = "endpoint secret cannot be read"
		log.ErrorContext(ctx, "webhook attempt: open secret", "error", err.Error())
	} else {
		n := d.AttemptNumber()
		began := time.Now()
		resp, err = s.d.Sender.Send(ctx, ports.WebhookRequest{URL: ep.URL, Body: d.Payload, Headers: map[string]string{
			"Content-Type":               "application/json",
			"X-Service-Signature":        Sign(secret, d.Payload),
			"X-Service-Event-Id":         d.EventID,
			"X-Service-Event-Type":       string(d.EventType),
			"X-Service-Delivery-Attempt": strconv.Itoa(n),
		}})
		if err != nil {
			// A time-out or refused connection took time too: record it.
			resp.Latency = time.Since(began)
			a.Error = err.Error()
		}
		a.StatusCode, a.LatencyMs = resp.StatusCode, resp.Latency.Milliseconds()
	}
	next := d.Record(a, s.d.Policy.Schedule, s.d.Clock.Now())
	ok, err := s.d.Deliveries.Complete(ctx, next, s.owner)
	if err != nil {
		log.ErrorContext(ctx, "webhook attempt: record", "error", err.Error())
		return
	}
	if !ok {
		log.WarnContext(ctx, "webhook attempt outlived its lease; another dispatcher took the delivery")
		return
	}
	outcome := "retry"
	switch next.Status {
	case webhook.StatusSucceeded:
		outcome = "succeeded"
	case webhook.StatusFailed:
		outcome = "failed"
	}
	s.d.Metrics.Attempt(outcome, resp.Latency)
}
