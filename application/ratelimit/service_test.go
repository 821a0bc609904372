package ratelimit_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/application/ratelimit"
	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/domain/team"
	"github.com/profilesvc/profilesvc/ports"
)

// countingLimiter allows limit hits per key and reports a fixed reset and,
// once refused, a fixed wait.
type countingLimiter struct {
	hits map[string]int
	err  error
}

func (c *countingLimiter) Hit(_ context.Context, key string, limit int, _ time.Duration) (ports.Decision, error) {
	if c.err != nil {
		return ports.Decision{}, c.err
	}
	c.hits[key]++
	n := c.hits[key]
	d := ports.Decision{Allowed: n <= limit, Remaining: max(limit-n, 0), Reset: 42 * time.Second}
	if !d.Allowed {
		d.RetryAfter = 14 * time.Second
	}
	return d, nil
}

func (c *countingLimiter) Check(context.Context, string, int, time.Duration) (ports.Decision, error) {
	panic("not used")
}

func (c *countingLimiter) Reset(context.Context, string, time.Duration) error { panic("not used") }

func TestEachKeyAndEachUserHasItsOwnBudget(t *testing.T) {
	l := &countingLimiter{hits: map[string]int{}}
	svc := ratelimit.New(l, "default", 2, time.Minute, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	user := team.Actor{UserID: "usr_1", TeamID: "team_1"}
	key := team.Actor{UserID: "usr_1", TeamID: "team_1", APIKeyID: "key_1"}
	other := team.Actor{UserID: "usr_2", TeamID: "team_1"}
	for i, want := range []int{1, 0} {
		q, err := svc.Take(ctx, user)
		if err != nil || q.Remaining != want || q.Policy != "default" || q.Limit != 2 || q.Window != time.Minute || q.Reset != 42*time.Second {
			t.Fatalf("request %d: %+v, %v", i+1, q, err)
		}
	}
	q, err := svc.Take(ctx, user)
	var de *domain.Error
	if !errors.As(err, &de) || de.Kind != domain.KindRateLimited || de.RetryAfter != 14*time.Second || q.Remaining != 0 {
		t.Fatalf("third request: %+v, %v; want rate limited for 14s", q, err)
	}
	if _, err := svc.Take(ctx, key); err != nil {
		t.Fatalf("an API key has a budget of its own apart from its user: %v", err)
	}
	if _, err := svc.Take(ctx, other); err != nil {
		t.Fatalf("another user shares the first one's budget: %v", err)
	}
}

func TestAFailingLimiterLetsRequestsThrough(t *testing.T) {
	svc := ratelimit.New(&countingLimiter{err: errors.New("boom")}, "default", 2, time.Minute, slog.New(slog.DiscardHandler))
	q, err := svc.Take(context.Background(), team.Actor{UserID: "usr_1"})
	if err != nil || q.Remaining != 2 || q.Reset != time.Minute {
		t.Fatalf("%+v, %v", q, err)
	}
}

func TestEachAddressHasItsOwnBudgetApartFromCallers(t *testing.T) {
	l := &countingLimiter{hits: map[string]int{}}
	svc := ratelimit.New(l, "auth", 1, time.Minute, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	q, err := svc.TakeAddress(ctx, "127.0.0.1")
	if err != nil || q.Policy != "auth" || q.Limit != 1 || q.Remaining != 0 {
		t.Fatalf("first request: %+v, %v", q, err)
	}
	var de *domain.Error
	if _, err := svc.TakeAddress(ctx, "127.0.0.1"); !errors.As(err, &de) || de.Kind != domain.KindRateLimited || de.RetryAfter != 14*time.Second {
		t.Fatalf("second request from the address: %v; want rate limited for 14s", err)
	}
	if _, err := svc.TakeAddress(ctx, "::1"); err != nil {
		t.Fatalf("another address shares the first one's budget: %v", err)
	}
	if _, err := svc.Take(ctx, team.Actor{UserID: "127.0.0.1"}); err != nil {
		t.Fatalf("a caller whose id is an address shares that address's budget: %v", err)
	}
}
