package wiring

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/profilesvc/profilesvc/adapters/notices"
	"github.com/profilesvc/profilesvc/ports"
	"github.com/profilesvc/profilesvc/tests/poll"
)

// A commit on one instance wakes the dispatcher of another at once, not
// at its next poll.
func TestQueuedDeliveriesWakeEveryInstance(t *testing.T) {
	t.Parallel()
	n := notices.NewLocal()
	var wokeA, wokeB atomic.Int32
	a := &commitBroadcast{wake: func() { wokeA.Add(1) }, self: "a", notices: n, log: zap.NewNop()}
	b := &commitBroadcast{wake: func() { wokeB.Add(1) }, self: "b", notices: n, log: zap.NewNop()}
	defer a.listen()()
	defer b.listen()()
	// Hearing begins with a wake: notices before it may have been missed.
	poll.Until(t, "A and B listening", func() bool { return wokeA.Load() == 1 && wokeB.Load() == 1 })
	a.DeliveriesQueued()
	poll.Until(t, "B woken by A's commit", func() bool { return wokeB.Load() == 2 })
	if wokeA.Load() < 2 {
		t.Fatalf("A woke %d times, want its own commit to wake it", wokeA.Load())
	}
}

// An instance does not hear its own notices, which its commits woke it
// for already; it hears every other instance's, and regaining its hearing.
func TestAnInstanceDoesNotHearItsOwnNotices(t *testing.T) {
	t.Parallel()
	var woke atomic.Int32
	b := &commitBroadcast{wake: func() { woke.Add(1) }, self: "b"}
	for _, c := range []struct {
		nt   ports.Notice
		wake bool
	}{
		{ports.Notice{Kind: ports.NoticeMessage, Payload: "b"}, false},
		{ports.Notice{Kind: ports.NoticeMessage, Payload: "a"}, true},
		{ports.Notice{Kind: ports.NoticeMessage, Payload: ""}, true},
		{ports.Notice{Kind: ports.NoticeListening}, true},
		{ports.Notice{Kind: ports.NoticeDeaf}, false},
	} {
		before := woke.Load()
		b.hear(c.nt)
		if got := woke.Load() > before; got != c.wake {
			t.Errorf("hearing %+v woke the dispatcher: %v, want %v", c.nt, got, c.wake)
		}
	}
}

// gatedNotices holds the first Publish until released and counts them all.
type gatedNotices struct {
	ports.Notices
	gate      chan struct{}
	published atomic.Int32
}

func (g *gatedNotices) Publish(ctx context.Context, topic, payload string) error {
	if g.published.Add(1) == 1 {
		<-g.gate
	}
	return g.Notices.Publish(ctx, topic, payload)
}

// Commits during a publish are told by one more: a burst of creates costs
// two notices, not one each, and the last commit is still told.
func TestABurstOfCommitsIsToldInOneMoreNotice(t *testing.T) {
	t.Parallel()
	g := &gatedNotices{Notices: notices.NewLocal(), gate: make(chan struct{})}
	var wokeB atomic.Int32
	a := &commitBroadcast{wake: func() {}, self: "a", notices: g, log: zap.NewNop()}
	b := &commitBroadcast{wake: func() { wokeB.Add(1) }, self: "b", notices: g, log: zap.NewNop()}
	defer b.listen()()
	poll.Until(t, "B listening", func() bool { return wokeB.Load() == 1 })
	a.DeliveriesQueued()
	poll.Until(t, "the first publish under way", func() bool { return g.published.Load() == 1 })
	for range 999 {
		a.DeliveriesQueued()
	}
	close(g.gate)
	poll.Until(t, "B woken by the notices", func() bool { return wokeB.Load() == 3 })
	poll.Until(t, "the publisher done", func() bool { return !a.running.Load() })
	if got := g.published.Load(); got != 2 {
		t.Fatalf("1000 commits sent %d notices, want 2", got)
	}
}

// Under a stream of commits the notices are spaced: the one after a
// notice waits out what is left of the spacing, and covers every commit
// made while it waited.
func TestNoticesOfAStreamOfCommitsAreSpaced(t *testing.T) {
	t.Parallel()
	g := &gatedNotices{Notices: notices.NewLocal(), gate: make(chan struct{})}
	var pauses []time.Duration
	var mu sync.Mutex
	a := &commitBroadcast{wake: func() {}, self: "a", notices: g, log: zap.NewNop(), spacing: time.Hour, pause: func(d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
	}}
	a.DeliveriesQueued()
	poll.Until(t, "the first publish under way", func() bool { return g.published.Load() == 1 })
	for range 10 {
		a.DeliveriesQueued()
	}
	close(g.gate)
	poll.Until(t, "the publisher done", func() bool { return !a.running.Load() })
	mu.Lock()
	defer mu.Unlock()
	if got := g.published.Load(); got != 2 {
		t.Fatalf("11 commits sent %d notices, want 2", got)
	}
	if len(pauses) != 1 || pauses[0] <= 59*time.Minute || pauses[0] > time.Hour {
		t.Fatalf("pauses %v, want one of just under the hour's spacing before the second notice", pauses)
	}
}
