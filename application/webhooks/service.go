// Package webhooks owns the webhook use cases: a team's endpoints (with
// their secrets sealed at rest), the outbox that queues every event's
// deliveries with the write that makes it, and the dispatcher that attempts deliveries on SPEC's
// schedule, signs every body, and records every attempt.
package webhooks

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/profilesvc/profilesvc/application/paging"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/event"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/domain/webhook"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/ports/webhookstore"
)

// Policy holds the delivery schedule and the dispatcher's limits.
type Policy struct {
	// Schedule is the delay before each attempt (SPEC: 0s, 5s, 25s, 125s).
	Schedule webhook.Schedule
	// AllowPrivateTargets admits http:// URLs (the sender separately admits
	// private addresses).
	AllowPrivateTargets bool
	// LeaseTTL is how long a claimed delivery stays with its dispatcher; a
	// dispatcher that dies lets it lapse and another attempts it.
	LeaseTTL time.Duration
	// Workers bounds the attempts in flight in one process; each
	// endpoint's MaxInFlight bounds those to it, so a slow receiver does
	// not hold up the rest.
	Workers int
	// PerTeam bounds the attempts in flight in one process for one team,
	// so that one team's receivers that never answer hold at most this
	// many workers for the length of their time-out, and the other teams'
	// deliveries go on. By default it is half the workers: above an
	// endpoint's default MaxInFlight, so one slow endpoint leaves room for
	// its team's others.
	PerTeam int
	// PollInterval bounds how long the dispatcher sleeps without a wake-up:
	// work committed by other instances is seen within it.
	PollInterval time.Duration
	// MaxEndpoints bounds a team's endpoints; 0 is no bound.
	MaxEndpoints int
	// Retention is how long finished deliveries and dispatched outbox
	// events are kept (from when they finished, from when they occurred);
	// PruneBatch is how many of each one prune deletes.
	Retention  time.Duration
	PruneBatch int
}

// Deps are the ports the service needs.
type Deps struct {
	Tx         ports.UnitOfWork
	Teams      TeamLock
	Endpoints  webhookstore.Endpoints
	Deliveries webhookstore.Deliveries
	Outbox     ports.Outbox
	Sender     ports.WebhookSender
	Box        ports.SecretBox
	Metrics    ports.WebhookMetrics
	Clock      ports.Clock
	IDs        ports.IDs
	Log        *slog.Logger
	Waker      *Waker
	// Queued is told when a unit that queued deliveries of its events has
	// committed; nil: this instance's Waker alone.
	Queued ports.DeliveriesNotifier
	Policy Policy
}

// TeamLock takes a team's lock for the rest of the unit of work
// (teamstore.Teams has it), so that counting a team's endpoints and adding
// one is atomic across instances.
type TeamLock interface {
	Lock(ctx context.Context, teamID string) error
}

// Service runs the webhook use cases and the delivery pipeline.
type Service struct {
	d     Deps
	owner string
}

// New returns the service.
func New(d Deps) *Service {
	p := &d.Policy
	if p.Workers <= 0 {
		p.Workers = 64
	}
	if p.PerTeam <= 0 {
		p.PerTeam = max(1, p.Workers/2)
	}
	if p.PollInterval <= 0 {
		p.PollInterval = time.Second
	}
	if p.LeaseTTL <= 0 {
		p.LeaseTTL = time.Minute
	}
	if p.Retention <= 0 {
		p.Retention = 7 * 24 * time.Hour
	}
	if p.PruneBatch <= 0 {
		p.PruneBatch = 500
	}
	if d.Waker == nil {
		d.Waker = NewWaker()
	}
	if d.Queued == nil {
		d.Queued = d.Waker
	}
	return &Service{d: d, owner: d.IDs.New("dsp")}
}

// CreateInput is a new endpoint.
type CreateInput struct {
	URL    string
	Events []string
	Secret string
	// MaxInFlight is webhook.DefaultMaxInFlight when nil; RateLimit is no
	// limit when nil or 0.
	MaxInFlight *int
	RateLimit   *int
}

func (s *Service) checkTarget(ctx context.Context, v *domain.Validation, url string) {
	if err := s.d.Sender.CheckTarget(ctx, url); err != nil {
		v.Add("url", err.Error())
	}
}

// Create stores an endpoint; its secret is sealed and never shown again.
func (s *Service) Create(ctx context.Context, actor team.Actor, in CreateInput) (webhook.Endpoint, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return webhook.Endpoint{}, err
	}
	v := &domain.Validation{}
	url := webhook.CheckURL(v, in.URL, s.d.Policy.AllowPrivateTargets)
	events := webhook.CheckEvents(v, in.Events)
	webhook.CheckSecret(v, in.Secret)
	limits := checkLimits(v, in.MaxInFlight, in.RateLimit)
	if v.Err() == nil {
		s.checkTarget(ctx, v, url)
	}
	if err := v.Err(); err != nil {
		return webhook.Endpoint{}, err
	}
	sealed, err := s.d.Box.Seal([]byte(in.Secret))
	if err != nil {
		return webhook.Endpoint{}, err
	}
	now := s.d.Clock.Now()
	ep := webhook.NewEndpoint(s.d.IDs.New("whk"), actor.TeamID, url, events, sealed, now).Change(limits, now)
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Teams.Lock(ctx, actor.TeamID); err != nil {
			return err
		}
		n, err := s.d.Endpoints.Count(ctx, actor.TeamID)
		if err != nil {
			return err
		}
		if err := team.CheckQuota(n, s.d.Policy.MaxEndpoints, "webhook endpoints"); err != nil {
			return err
		}
		return s.d.Endpoints.Create(ctx, ep)
	})
	if err != nil {
		return webhook.Endpoint{}, err
	}
	return ep, nil
}

// checkLimits validates the delivery limits given and returns them as a
// change.
func checkLimits(v *domain.Validation, maxInFlight, rateLimit *int) webhook.EndpointChange {
	if maxInFlight != nil {
		webhook.CheckMaxInFlight(v, *maxInFlight)
	}
	if rateLimit != nil {
		webhook.CheckRateLimit(v, *rateLimit)
	}
	return webhook.EndpointChange{MaxInFlight: maxInFlight, RateLimit: rateLimit}
}

// Get returns an endpoint of the actor's team.
func (s *Service) Get(ctx context.Context, actor team.Actor, id string) (webhook.Endpoint, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return webhook.Endpoint{}, err
	}
	return s.d.Endpoints.ByID(ctx, actor.TeamID, id)
}

// List returns a page of the team's endpoints, newest first.
func (s *Service) List(ctx context.Context, actor team.Actor, cursor string, limit int) (paging.Page[webhook.Endpoint], error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return paging.Page[webhook.Endpoint]{}, err
	}
	if err := paging.CheckCursor(cursor, "whk_"); err != nil {
		return paging.Page[webhook.Endpoint]{}, err
	}
	eps, err := s.d.Endpoints.List(ctx, actor.TeamID, cursor, limit+1)
	if err != nil {
		return paging.Page[webhook.Endpoint]{}, err
	}
	return paging.Cut(eps, limit, func(e webhook.Endpoint) string { return e.ID }), nil
}

// UpdateInput is a partial update: nil fields stay.
type UpdateInput struct {
	URL     *string
	Events  *[]string
	Secret  *string
	Enabled *bool
	// RateLimit 0 removes the limit.
	MaxInFlight *int
	RateLimit   *int
}

// Update changes an endpoint.
func (s *Service) Update(ctx context.Context, actor team.Actor, id string, in UpdateInput) (webhook.Endpoint, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return webhook.Endpoint{}, err
	}
	ep, err := s.d.Endpoints.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return webhook.Endpoint{}, err
	}
	v := &domain.Validation{}
	ch := checkLimits(v, in.MaxInFlight, in.RateLimit)
	ch.Enabled = in.Enabled
	if in.URL != nil {
		url := webhook.CheckURL(v, *in.URL, s.d.Policy.AllowPrivateTargets)
		if v.Err() == nil {
			s.checkTarget(ctx, v, url)
		}
		ch.URL = &url
	}
	if in.Events != nil {
		ch.Events = webhook.CheckEvents(v, *in.Events)
	}
	if in.Secret != nil {
		webhook.CheckSecret(v, *in.Secret)
	}
	if err := v.Err(); err != nil {
		return webhook.Endpoint{}, err
	}
	if in.Secret != nil {
		if ch.SecretSealed, err = s.d.Box.Seal([]byte(*in.Secret)); err != nil {
			return webhook.Endpoint{}, err
		}
	}
	ep = ep.Change(ch, s.d.Clock.Now())
	if err := s.d.Endpoints.Update(ctx, ep); err != nil {
		return webhook.Endpoint{}, err
	}
	return ep, nil
}

// Delete removes an endpoint and its deliveries.
func (s *Service) Delete(ctx context.Context, actor team.Actor, id string) error {
	if err := actor.Require(team.ActAdminister); err != nil {
		return err
	}
	return s.d.Endpoints.Delete(ctx, actor.TeamID, id)
}

// sampleData is the data of a test event of each type, in the shapes the
// real events have.
func sampleData(t event.Type, teamID string, now time.Time) map[string]any {
	profile := map[string]any{"id": "prf_sample", "name": "Sample profile", "browser": "chromium",
		"fingerprint_template": "Chrome on Windows (US)", "created_at": now.Format(time.RFC3339Nano)}
	switch {
	case strings.HasPrefix(string(t), "profile."):
		d := map[string]any{"profile": profile}
		if t == event.ProfileLaunched || t == event.ProfileStopped {
			d["session"] = map[string]any{"id": "ses_sample", "launched_by": "usr_sample",
				"started_at": now.Format(time.RFC3339Nano), "expires_at": now.Add(time.Hour).Format(time.RFC3339Nano)}
		}
		if t == event.ProfileStopped {
			d["reason"] = "released"
		}
		return d
	case strings.HasPrefix(string(t), "proxy."):
		d := map[string]any{"proxy": map[string]any{"id": "prx_sample", "name": "Sample proxy", "type": "http", "host": "proxy.example.com", "port": 8080}}
		switch t {
		case event.ProxyAssigned:
			d["profile"] = profile
		case event.ProxyFailed:
			d["error"] = "proxy authentication failed"
		}
		return d
	}
	return map[string]any{"team": map[string]any{"id": teamID, "name": "Sample team"},
		"member": map[string]any{"id": "mem_sample", "email": "member@example.com", "role": "member"}}
}

// Test sends a sample event of eventType to the endpoint through the real
// pipeline and returns its delivery id.
func (s *Service) Test(ctx context.Context, actor team.Actor, id, eventType string) (string, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return "", err
	}
	t := event.Type(eventType)
	if !event.Known(t) {
		return "", domain.Invalid("event_type", "must be one of the event types")
	}
	ep, err := s.d.Endpoints.ByID(ctx, actor.TeamID, id)
	if err != nil {
		return "", err
	}
	now := s.d.Clock.Now().UTC()
	data, err := json.Marshal(sampleData(t, actor.TeamID, now))
	if err != nil {
		return "", err
	}
	e := event.Event{ID: s.d.IDs.New("evt"), TeamID: actor.TeamID, Type: t, OccurredAt: now, Data: data}
	payload, err := webhook.Payload(e)
	if err != nil {
		return "", err
	}
	d := webhook.NewDelivery(s.d.IDs.New("dlv"), ep, e, payload, s.d.Policy.Schedule, now)
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		if err := s.d.Deliveries.Create(ctx, d); err != nil {
			return err
		}
		s.queued(ctx)
		return nil
	})
	if err != nil {
		return "", err
	}
	return d.ID, nil
}

// ListDeliveries returns a page of an endpoint's deliveries, newest first.
func (s *Service) ListDeliveries(ctx context.Context, actor team.Actor, endpointID, status, cursor string, limit int) (paging.Page[webhook.Delivery], error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return paging.Page[webhook.Delivery]{}, err
	}
	f := webhookstore.DeliveryFilter{BeforeID: cursor, Limit: limit + 1}
	if status != "" {
		st, ok := webhook.ParseStatus(status)
		if !ok {
			return paging.Page[webhook.Delivery]{}, domain.BadRequest("status must be pending, succeeded or failed")
		}
		f.Status = st
	}
	if err := paging.CheckCursor(cursor, "dlv_"); err != nil {
		return paging.Page[webhook.Delivery]{}, err
	}
	if _, err := s.d.Endpoints.ByID(ctx, actor.TeamID, endpointID); err != nil {
		return paging.Page[webhook.Delivery]{}, err
	}
	ds, err := s.d.Deliveries.List(ctx, actor.TeamID, endpointID, f)
	if err != nil {
		return paging.Page[webhook.Delivery]{}, err
	}
	return paging.Cut(ds, limit, func(d webhook.Delivery) string { return d.ID }), nil
}

// Retry queues a failed delivery again for a new round of the schedule.
func (s *Service) Retry(ctx context.Context, actor team.Actor, endpointID, deliveryID string) (webhook.Delivery, error) {
	if err := actor.Require(team.ActAdminister); err != nil {
		return webhook.Delivery{}, err
	}
	d, err := s.d.Deliveries.ByID(ctx, actor.TeamID, deliveryID)
	if err != nil {
		return webhook.Delivery{}, err
	}
	if d.EndpointID != endpointID {
		return webhook.Delivery{}, domain.NotFound("delivery")
	}
	next, ok := d.Retry(s.d.Clock.Now())
	if !ok {
		return webhook.Delivery{}, domain.Conflict("only a failed delivery can be retried; this one is " + string(d.Status))
	}
	err = s.d.Tx.Do(ctx, func(ctx context.Context) error {
		requeued, err := s.d.Deliveries.Requeue(ctx, next)
		if err != nil {
			return err
		}
		if !requeued {
			return domain.Conflict("the delivery is no longer failed")
		}
		s.queued(ctx)
		return nil
	})
	if err != nil {
		return webhook.Delivery{}, err
	}
	return next, nil
}
