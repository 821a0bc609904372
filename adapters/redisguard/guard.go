// Package redisguard owns what the service knows of Redis' health: whether
// it answers right now. The adapters that can do without Redis (the cache,
// the rate limiter) run their calls through a Guard, so that once Redis has
// failed they fall back at once instead of every request waiting for a
// timeout, and try Redis again at an interval until it answers.
package redisguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/domain"
	"github.com/profilesvc/profilesvc/ports"
)

// ErrUnavailable is returned, wrapping Redis' own error when there was one,
// for a call that did not reach Redis or got no answer from it.
var ErrUnavailable = domain.Unavailable("redis does not answer")

// Guard tracks whether Redis answers. While it does not, Do skips Redis
// altogether, except for one call at a time after every retry interval,
// which finds out whether Redis is back.
type Guard struct {
	clock     ports.Clock
	retry     time.Duration
	log       *zap.Logger
	up        prometheus.Gauge
	fallbacks *prometheus.CounterVec

	mu        sync.Mutex
	down      bool
	nextTrial time.Time
	trying    bool
}

// New returns a guard that believes Redis answers until a call fails, and
// then tries it again every retry. It registers on reg the gauge profilesvc_redis_up
// and the counter profilesvc_redis_fallbacks_total, by component.
func New(c ports.Clock, retry time.Duration, log *zap.Logger, reg prometheus.Registerer) *Guard {
	g := &Guard{
		clock: c,
		retry: retry,
		log:   log,
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "profilesvc_redis_up",
			Help: "1 while Redis answers, 0 while the cache is bypassed and rate limits are counted in process.",
		}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "profilesvc_redis_fallbacks_total",
			Help: "Calls served without Redis because it did not answer, by component (cache, ratelimit).",
		}, []string{"component"}),
	}
	g.up.Set(1)
	reg.MustRegister(g.up, g.fallbacks)
	return g
}

// Do runs op against Redis unless Redis is known to be down. When Redis is
// skipped or gives no answer, Do returns an error matching ErrUnavailable
// and counts a fallback for component; an answer from Redis, error replies
// included, is returned as it is.
func (g *Guard) Do(ctx context.Context, component string, op func(context.Context) error) error {
	if !g.admit() {
		g.fallbacks.WithLabelValues(component).Inc()
		return ErrUnavailable
	}
	err := op(ctx)
	if err == nil || answered(err) {
		g.succeeded()
		return err
	}
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// The caller gave up (a client went away): that says nothing of Redis.
		g.release()
		return err
	}
	g.failed(err)
	g.fallbacks.WithLabelValues(component).Inc()
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// answered is true for an error that Redis itself sent (redis.Nil
// included): Redis is there.
func answered(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

func (g *Guard) admit() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.down {
		return true
	}
	if g.trying || g.clock.Now().Before(g.nextTrial) {
		return false
	}
	g.trying = true
	return true
}

func (g *Guard) succeeded() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trying = false
	if g.down {
		g.down = false
		g.up.Set(1)
		g.log.Info("redis answers again: the cache and the rate limits use it again")
	}
}

func (g *Guard) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trying = false
}

func (g *Guard) failed(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trying = false
	g.nextTrial = g.clock.Now().Add(g.retry)
	if !g.down {
		g.down = true
		g.up.Set(0)
		g.log.Warn("redis does not answer: the cache is bypassed and rate limits are counted in this process until it does",
			zap.Error(err), zap.Duration("retry_every", g.retry))
	}
}
