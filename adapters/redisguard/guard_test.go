package redisguard_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/redisguard"
)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

type fixture struct {
	guard *redisguard.Guard
	clock *clock.Fake
	reg   *prometheus.Registry
	logs  *observer.ObservedLogs
}

func newFixture() fixture {
	core, logs := observer.New(zapcore.InfoLevel)
	c := clock.NewFake(start)
	reg := prometheus.NewRegistry()
	return fixture{guard: redisguard.New(c, time.Second, zap.New(core), reg), clock: c, reg: reg, logs: logs}
}

var errNoAnswer = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func TestGuardSkipsRedisUntilTheRetryIntervalThenRecovers(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	calls := 0
	failing := func(context.Context) error { calls++; return errNoAnswer }
	working := func(context.Context) error { calls++; return nil }

	if err := f.guard.Do(ctx, "cache", failing); !errors.Is(err, redisguard.ErrUnavailable) || !errors.Is(err, errNoAnswer) {
		t.Fatalf("failed call: %v, want ErrUnavailable wrapping Redis' error", err)
	}
	for range 5 {
		if err := f.guard.Do(ctx, "cache", working); !errors.Is(err, redisguard.ErrUnavailable) {
			t.Fatalf("call while down: %v, want ErrUnavailable without trying Redis", err)
		}
	}
	if calls != 1 {
		t.Fatalf("Redis was called %d times, want once: calls while down must be skipped", calls)
	}
	f.clock.Advance(999 * time.Millisecond)
	_ = f.guard.Do(ctx, "cache", working)
	if calls != 1 {
		t.Fatal("Redis was tried again before the retry interval")
	}
	f.clock.Advance(time.Millisecond)
	if err := f.guard.Do(ctx, "ratelimit", working); err != nil {
		t.Fatalf("trial after the interval: %v", err)
	}
	if err := f.guard.Do(ctx, "ratelimit", working); err != nil || calls != 3 {
		t.Fatalf("after recovery: %v, calls %d; want Redis used again", err, calls)
	}
	if n := f.logs.FilterMessageSnippet("redis does not answer").Len(); n != 1 {
		t.Errorf("%d warnings of the outage, want one", n)
	}
	if n := f.logs.FilterMessageSnippet("redis answers again").Len(); n != 1 {
		t.Errorf("%d notes of the recovery, want one", n)
	}
}

func TestGuardCountsFallbacksAndUp(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	_ = f.guard.Do(ctx, "cache", func(context.Context) error { return io.EOF })
	_ = f.guard.Do(ctx, "cache", func(context.Context) error { return nil })
	_ = f.guard.Do(ctx, "ratelimit", func(context.Context) error { return nil })
	got := metrics(t, f.reg)
	want := map[string]float64{"profilesvc_redis_fallbacks_total{cache}": 2, "profilesvc_redis_fallbacks_total{ratelimit}": 1, "profilesvc_redis_up": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}

// metrics reads every counter and gauge of reg, keyed by name and the
// values of their labels.
func metrics(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

func TestRepliesFromRedisAreNotOutages(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	for _, reply := range []error{redis.Nil, redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")} {
		if err := f.guard.Do(ctx, "cache", func(context.Context) error { return reply }); !errors.Is(err, reply) || errors.Is(err, redisguard.ErrUnavailable) {
			t.Fatalf("reply %v came back as %v", reply, err)
		}
	}
	called := false
	_ = f.guard.Do(ctx, "cache", func(context.Context) error { called = true; return nil })
	if !called {
		t.Fatal("a reply from Redis marked it down")
	}
}

func TestACallerGivingUpIsNotAnOutage(t *testing.T) {
	f := newFixture()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.guard.Do(ctx, "cache", func(ctx context.Context) error { return ctx.Err() }); errors.Is(err, redisguard.ErrUnavailable) {
		t.Fatalf("canceled call: %v", err)
	}
	called := false
	_ = f.guard.Do(context.Background(), "cache", func(context.Context) error { called = true; return nil })
	if !called {
		t.Fatal("a canceled call marked Redis down")
	}
}

func TestOneTrialAtATime(t *testing.T) {
	f := newFixture()
	ctx := context.Background()
	_ = f.guard.Do(ctx, "cache", func(context.Context) error { return errNoAnswer })
	f.clock.Advance(time.Second)
	inTrial := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- f.guard.Do(ctx, "cache", func(context.Context) error { close(inTrial); <-release; return nil })
	}()
	<-inTrial
	called := false
	if err := f.guard.Do(ctx, "cache", func(context.Context) error { called = true; return nil }); !errors.Is(err, redisguard.ErrUnavailable) || called {
		t.Fatalf("a second call during the trial reached Redis (%v)", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// redisReply is an error reply from the server, as go-redis returns it.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}
