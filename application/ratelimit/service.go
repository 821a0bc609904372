// Package ratelimit owns the general rate limits of the API: each API key,
// and each user signed in with a token, may make so many requests per
// window, and each client address so many requests to the unauthenticated
// account endpoints, counted wherever the ports.RateLimiter counts (shared
// by every instance on Redis).
package ratelimit

import (
	"context"
	"log/slog"
	"time"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// Quota is where a caller stands: its budget refills evenly over Window,
// one request every Window/Limit.
type Quota struct {
	// Policy names the limit ("default", "auth"), as the RateLimit headers
	// name it.
	Policy string
	// Limit and Window are the policy: Limit requests per Window.
	Limit  int
	Window time.Duration
	// Remaining is how many requests the budget allows after this one.
	Remaining int
	// Reset is how long until the budget is whole again.
	Reset time.Duration
}

// Service applies one limit, its policy, to every caller it is asked about.
type Service struct {
	limiter ports.RateLimiter
	policy  string
	limit   int
	window  time.Duration
	log     *slog.Logger
}

// New returns the service of the policy named policy: limit requests per
// window for each caller.
func New(limiter ports.RateLimiter, policy string, limit int, window time.Duration, log *slog.Logger) *Service {
	return &Service{limiter: limiter, policy: policy, limit: limit, window: window, log: log}
}

// Take counts one request of actor. Past the budget it returns the quota
// with a KindRateLimited error whose RetryAfter is when the budget allows
// one more request. A limiter that fails lets the request through: the
// limit protects the service, and a failure to count must not become an
// outage of its own.
func (s *Service) Take(ctx context.Context, actor team.Actor) (Quota, error) {
	key := "req:user:" + actor.UserID
	if actor.APIKeyID != "" {
		key = "req:key:" + actor.APIKeyID
	}
	return s.take(ctx, key)
}

// TakeAddress counts one request from the client address addr, as Take
// counts one of a caller.
func (s *Service) TakeAddress(ctx context.Context, addr string) (Quota, error) {
	return s.take(ctx, "req:"+s.policy+":addr:"+addr)
}

func (s *Service) take(ctx context.Context, key string) (Quota, error) {
	q := Quota{Policy: s.policy, Limit: s.limit, Window: s.window, Remaining: s.limit, Reset: s.window}
	d, err := s.limiter.Hit(ctx, key, s.limit, s.window)
	if err != nil {
		s.log.ErrorContext(ctx, "counting a request against the rate limit failed; letting it through", "policy", s.policy, "error", err.Error())
		return q, nil
	}
	q.Remaining, q.Reset = d.Remaining, d.Reset
	if !d.Allowed {
		return q, domain.RateLimited("too many requests; wait for the budget to refill", d.RetryAfter)
	}
	return q, nil
}
