package webhooks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
	"golang.org/x/time/rate"
)

// Waker wakes the dispatcher's delivery loop when there may be work:
// deliveries were queued (by a write's unit, a test or a retry) or an
// attempt finished. Wakes while it is busy collapse into one. Anything may
// feed it: this process's units of work after they commit, and a notice
// that another instance queued deliveries, so that every instance claims
// at once rather than at its next poll.
type Waker struct{ ch chan struct{} }

// NewWaker returns a waker.
func NewWaker() *Waker { return &Waker{ch: make(chan struct{}, 1)} }

// DeliveriesQueued wakes the dispatcher (ports.DeliveriesNotifier).
func (w *Waker) DeliveriesQueued() { w.Wake() }

// Wake wakes the dispatcher to claim due deliveries.
func (w *Waker) Wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the attempts in flight and
// their records. Every instance with delivery on runs it: claims and
// leases share the work.
func (s *Service) Run(ctx context.Context) {
	r := s.newRun()
	defer r.stop()
	var checked time.Time
	for ctx.Err() == nil {
		wait := s.d.Policy.PollInterval
		started, token := s.claimAndStart(ctx, r)
		if token > 0 {
			wait = min(wait, token)
		}
		// While attempts start, each one's end wakes the loop: the
		// pending summary (for the idle sleep and the metric) is read
		// when nothing started, or once a poll interval while busy.
		if now := time.Now(); started == 0 || now.Sub(checked) >= s.d.Policy.PollInterval {
			checked = now
			wait = s.checkPending(ctx, wait)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-s.d.Waker.ch:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// checkPending reports the oldest pending delivery and returns wait
// shortened to when the earliest is due.
func (s *Service) checkPending(ctx context.Context, wait time.Duration) time.Duration {
	next, oldest, ok, err := s.d.Deliveries.Pending(ctx)
	if err != nil {
		return wait
	}
	if !ok {
		s.d.Metrics.OldestPending(0)
		return wait
	}
	now := s.d.Clock.Now()
	s.d.Metrics.OldestPending(now.Sub(oldest))
	return min(wait, s.idle(next.Sub(now)))
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

// recordBatch bounds the outcomes one Complete writes.
const recordBatch = 256

// endpointFlight is what this process is doing with one endpoint: the
// attempts in flight, the endpoint's bounds as last read, and its rate
// limit (nil: none), a bucket of at most one second's worth of attempts
// refilled at the rate.
type endpointFlight struct {
	n           int
	maxInFlight int
	rateLimit   int
	limiter     *rate.Limiter
}

// settle adopts the endpoint's bounds as last read, keeping its rate
// limit's bucket while the rate stays.
func (e *endpointFlight) settle(ep webhook.Endpoint) {
	if ep.RateLimit != e.rateLimit {
		// A new rate starts with a full second of it, as the store's
		// bound for an endpoint no dispatcher has in hand assumes.
		e.rateLimit, e.limiter = ep.RateLimit, nil
		if e.rateLimit > 0 {
			e.limiter = rate.NewLimiter(rate.Limit(e.rateLimit), e.rateLimit)
		}
	}
	e.maxInFlight = ep.MaxInFlight
	if e.maxInFlight <= 0 {
		e.maxInFlight = webhook.DefaultMaxInFlight
	}
}

// inFlight is what this process is attempting: per endpoint and per team,
// and which deliveries.
type inFlight struct {
	mu         sync.Mutex
	endpoints  map[string]*endpointFlight
	perTeam    map[string]int
	deliveries map[string]bool
}

func newInFlight() *inFlight {
	return &inFlight{endpoints: map[string]*endpointFlight{}, perTeam: map[string]int{}, deliveries: map[string]bool{}}
}

// room is, for each endpoint this process has in hand, how many attempts
// it may start at now: below its MaxInFlight, and within what its rate
// limit allows. An endpoint with nothing in flight and a full bucket is
// dropped: the store bounds it the same from its stored settings. token is
// how long until an endpoint held back by its rate limit alone has an
// attempt again (0: none is).
func (f *inFlight) room(now time.Time) (room map[string]int, token time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	room = make(map[string]int, len(f.endpoints))
	for id, e := range f.endpoints {
		var tokens float64
		if e.limiter != nil {
			tokens = e.limiter.TokensAt(now)
		}
		if e.n == 0 && (e.limiter == nil || tokens >= float64(e.limiter.Burst())) {
			delete(f.endpoints, id)
			continue
		}
		n := e.maxInFlight - e.n
		if e.limiter != nil && tokens < float64(n) {
			n = int(tokens)
			if n == 0 {
				if wait := untilAllowed(e.limiter, now); token == 0 || wait < token {
					token = wait
				}
			}
		}
		room[id] = max(n, 0)
	}
	return room, token
}

// untilAllowed is how long after now lim allows one more attempt. A wait
// under a millisecond counts as one, so that a high rate does not have the
// loop claim from the store in a spin.
func untilAllowed(lim *rate.Limiter, now time.Time) time.Duration {
	r := lim.ReserveN(now, 1)
	defer r.CancelAt(now)
	return max(r.DelayFrom(now), time.Millisecond)
}

// busyTeams lists the teams with limit attempts or more in flight.
func (f *inFlight) busyTeams(limit int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for id, n := range f.perTeam {
		if n >= limit {
			out = append(out, id)
		}
	}
	return out
}

// start records an attempt of d to ep at now, unless d is being attempted
// already (its lease lapsed under a clock that jumped, or a very slow
// attempt, and the attempt in flight will record its outcome; a second
// would double it), or ep has no room or its rate limit does not allow
// one: its settings changed between the claim and the read of the
// endpoint. Either way the lease lapses and the delivery is claimed again.
func (f *inFlight) start(d webhook.Delivery, ep webhook.Endpoint, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.deliveries[d.ID] {
		return false
	}
	e := f.endpoints[d.EndpointID]
	if e == nil {
		e = &endpointFlight{}
		f.endpoints[d.EndpointID] = e
	}
	e.settle(ep)
	if e.n >= e.maxInFlight || (e.limiter != nil && !e.limiter.AllowN(now, 1)) {
		return false
	}
	e.n++
	f.deliveries[d.ID] = true
	f.perTeam[d.TeamID]++
	return true
}

// answered gives back the room d's attempt took: the receiver has
// answered (or failed to).
func (f *inFlight) answered(d webhook.Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leave(d.TeamID)
	if e := f.endpoints[d.EndpointID]; e != nil {
		e.n--
	}
}

// leave counts one attempt of team less.
func (f *inFlight) leave(team string) {
	if f.perTeam[team]--; f.perTeam[team] <= 0 {
		delete(f.perTeam, team)
	}
}

// recorded forgets d once its outcome is stored (or failed to be).
func (f *inFlight) recorded(d webhook.Delivery) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.deliveries, d.ID)
}

// run is one dispatcher's state between claims: the attempts in flight,
// the workers they hold, and the outcomes waiting to be recorded. A worker
// is held from the claim until its outcome is queued for the recorder, so
// attempts and queued outcomes are bounded by twice the workers whatever
// the store's speed; the endpoint's room is given back as soon as the
// receiver has answered, so the next attempt to it need not wait for the
// write.
type run struct {
	flight *inFlight
	slots  chan struct{}
	// wg counts the attempts started and not yet recorded.
	wg       sync.WaitGroup
	outcomes chan outcome
	recorded chan struct{}
}

// outcome is a finished attempt: the delivery as claimed and as it is to
// be stored.
type outcome struct {
	claimed, next webhook.Delivery
	latency       time.Duration
}

// newRun returns a run whose recorder is running; stop ends it.
func (s *Service) newRun() *run {
	r := &run{
		flight:   newInFlight(),
		slots:    make(chan struct{}, s.d.Policy.Workers),
		outcomes: make(chan outcome, s.d.Policy.Workers),
		recorded: make(chan struct{}),
	}
	go s.record(r)
	return r
}

// stop waits for the attempts in flight to be recorded, then ends the
// recorder.
func (r *run) stop() {
	r.wg.Wait()
	close(r.outcomes)
	<-r.recorded
}

// record writes outcomes as they come, in batches: whatever finished while
// the previous batch was being written goes in the next one statement, so
// under load a write serves many attempts and when idle an outcome is
// written at once. Until its outcome is stored (or its write failed: the
// lease then lapses and the delivery is attempted again, as when an
// instance dies) a delivery stays marked in flight, so a lapsed lease
// cannot start a second attempt of it here.
func (s *Service) record(r *run) {
	defer close(r.recorded)
	ctx := context.Background()
	batch := make([]outcome, 0, recordBatch)
	for o := range r.outcomes {
		batch = append(batch[:0], o)
	more:
		for len(batch) < recordBatch {
			select {
			case o, ok := <-r.outcomes:
				if !ok {
					break more
				}
				batch = append(batch, o)
			default:
				break more
			}
		}
		s.complete(ctx, batch)
		for _, o := range batch {
			r.flight.recorded(o.claimed)
			r.wg.Done()
		}
		s.d.Waker.Wake()
	}
}

// complete stores a batch of outcomes and reports each.
func (s *Service) complete(ctx context.Context, batch []outcome) {
	ds := make([]webhook.Delivery, len(batch))
	for i, o := range batch {
		ds[i] = o.next
	}
	applied, err := s.d.Deliveries.Complete(ctx, s.owner, ds...)
	for i, o := range batch {
		log := s.d.Log.With("team_id", o.next.TeamID, "delivery_id", o.next.ID, "endpoint_id", o.next.EndpointID, "event_id", o.next.EventID)
		if err != nil {
			log.ErrorContext(ctx, "webhook attempt: record", "error", err.Error())
			continue
		}
		if !applied[i] {
			log.WarnContext(ctx, "webhook attempt outlived its lease; another dispatcher took the delivery")
			continue
		}
		outcome := "retry"
		switch o.next.Status {
		case webhook.StatusSucceeded:
			outcome = "succeeded"
		case webhook.StatusFailed:
			outcome = "failed"
		}
		s.d.Metrics.Attempt(outcome, o.latency)
		if outcome != "succeeded" && len(o.next.Attempts) > 0 {
			last := o.next.Attempts[len(o.next.Attempts)-1]
			attrs := []any{"attempt", last.N, "status_code", last.StatusCode, "error", last.Error}
			if outcome == "retry" {
				log.WarnContext(ctx, "webhook attempt failed", append(attrs, "next_attempt_at", o.next.NextAttemptAt)...)
			} else {
				log.ErrorContext(ctx, "webhook delivery failed: no attempt left", attrs...)
			}
		}
	}
}

// claimAndStart claims as many due deliveries as there are free workers,
// within each endpoint's room, and starts an attempt for each. It returns
// how many it started, and how long until an endpoint held back by its
// rate limit may go on (0: none is).
func (s *Service) claimAndStart(ctx context.Context, r *run) (started int, token time.Duration) {
	now := s.d.Clock.Now()
	room, token := r.flight.room(now)
	free := cap(r.slots) - len(r.slots)
	if free == 0 {
		return 0, token
	}
	claimed, err := s.d.Deliveries.Claim(ctx, webhookstore.DeliveryClaim{
		Owner: s.owner, Now: now, LeaseUntil: now.Add(s.d.Policy.LeaseTTL),
		Limit: free, Room: room,
		PerTeam: s.d.Policy.PerTeam, ExcludeTeams: r.flight.busyTeams(s.d.Policy.PerTeam),
	})
	if err != nil {
		if ctx.Err() == nil {
			s.d.Log.ErrorContext(ctx, "webhook claim", "error", err.Error())
		}
		return 0, token
	}
	// A claim holds a few deliveries of an endpoint: read each endpoint
	// once for all of them.
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
		if !r.flight.start(d, ep, now) {
			continue
		}
		started++
		r.slots <- struct{}{}
		r.wg.Add(1)
		go s.attemptOne(context.WithoutCancel(ctx), r, d, ep)
	}
	return started, token
}

// attemptOne attempts d, gives back its endpoint's room as soon as the
// receiver has answered, and queues the outcome for the recorder. It holds
// a worker from the claim until then.
func (s *Service) attemptOne(ctx context.Context, r *run, d webhook.Delivery, ep webhook.Endpoint) {
	next, latency := s.attempt(ctx, d, ep)
	r.flight.answered(d)
	r.outcomes <- outcome{claimed: d, next: next, latency: latency}
	<-r.slots
	s.d.Waker.Wake()
}

// Sign is the X-Service-Signature of body: hex HMAC-SHA256 keyed with the
// endpoint's secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// SignStandard is the webhook-signature of Standard Webhooks
// (standardwebhooks.com) for the message id sent at at: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body", keyed with the endpoint's
// secret as it is (the libraries' "raw" secret). The timestamp is signed
// with the body, so a receiver that refuses old timestamps refuses a
// captured delivery replayed later.
func SignStandard(secret []byte, id string, at time.Time, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id + "." + strconv.FormatInt(at.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// attempt makes one attempt of d to ep and returns d with it recorded, and
// how long the receiver took.
func (s *Service) attempt(ctx context.Context, d webhook.Delivery, ep webhook.Endpoint) (webhook.Delivery, time.Duration) {
	a := webhook.Attempt{At: s.d.Clock.Now().UTC()}
	var resp ports.WebhookResponse
	if !ep.Enabled {
		a.Error = "endpoint is disabled"
	} else if secret, err := s.d.Box.Open(ep.SecretSealed); err != nil {
		a.Error = "endpoint secret cannot be read"
		s.d.Log.ErrorContext(ctx, "webhook attempt: open secret", "delivery_id", d.ID, "endpoint_id", d.EndpointID,
			"event_id", d.EventID, "error", err.Error())
	} else {
		n := d.AttemptNumber()
		began := time.Now()
		resp, err = s.d.Sender.Send(ctx, ports.WebhookRequest{URL: ep.URL, Body: d.Payload, Headers: map[string]string{
			"Content-Type":               "application/json",
			"X-Service-Signature":        Sign(secret, d.Payload),
			"X-Service-Event-Id":         d.EventID,
			"X-Service-Event-Type":       string(d.EventType),
			"X-Service-Delivery-Attempt": strconv.Itoa(n),
			// Standard Webhooks: the id stays the event's across attempts
			// (receivers deduplicate by it), the timestamp is the attempt's.
			"webhook-id":        d.EventID,
			"webhook-timestamp": strconv.FormatInt(a.At.Unix(), 10),
			"webhook-signature": SignStandard(secret, d.EventID, a.At, d.Payload),
		}})
		if err != nil {
			// A time-out or refused connection took time too: record it.
			resp.Latency = time.Since(began)
			a.Error = err.Error()
		}
		a.StatusCode, a.LatencyMs, a.Answer = resp.StatusCode, resp.Latency.Milliseconds(), resp.Answer
	}
	return d.Record(a, s.d.Policy.Schedule, s.d.Clock.Now()), resp.Latency
}
