package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// NoticesBus is one transport as several instances of the service see it.
type NoticesBus struct {
	// Instance returns the notices of one more instance on the transport,
	// started, and stopped when t ends. An in-process adapter, whose one
	// instance is the whole audience, may return the same one every time.
	Instance func(t *testing.T) ports.Notices
	// Cut breaks the listening connection of every instance from the
	// server's side; nil for an adapter without a connection to lose.
	Cut func(t *testing.T)
}

// NewNoticesBus builds a transport of its own for one subtest.
type NewNoticesBus func(t *testing.T) NoticesBus

// RunNotices checks that a ports.Notices delivers to every subscriber of a
// topic on every instance, the publisher's own included, and nothing of
// other topics; that cancel stops delivery; and that a lost connection is
// reported (NoticeDeaf, then NoticeListening once heard again) and
// delivery resumes after it.
func RunNotices(t *testing.T, newBus NewNoticesBus) {
	t.Helper()
	ctx := context.Background()

	t.Run("every subscriber of the topic hears it, the publisher's own included", func(t *testing.T) {
		t.Parallel()
		bus := newBus(t)
		a, b := bus.Instance(t), bus.Instance(t)
		onA, onB, onA2 := Listen(t, a, "auth"), Listen(t, b, "auth"), Listen(t, a, "auth")
		other := Listen(t, b, "other-topic")
		for _, r := range []*NoticeRecorder{onA, onB, onA2, other} {
			r.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
		}
		if err := a.Publish(ctx, "other-topic", "first"); err != nil {
			t.Fatal(err)
		}
		if err := a.Publish(ctx, "auth", "user:1\nteam:2"); err != nil {
			t.Fatal(err)
		}
		want := ports.Notice{Kind: ports.NoticeMessage, Payload: "user:1\nteam:2"}
		for name, r := range map[string]*NoticeRecorder{"publisher": onA, "other instance": onB, "second on publisher": onA2} {
			r.WaitFor(t, want)
			if got := r.Messages(); !slices.Equal(got, []string{"user:1\nteam:2"}) {
				t.Errorf("%s heard %q, want only the auth notice", name, got)
			}
		}
		other.WaitFor(t, ports.Notice{Kind: ports.NoticeMessage, Payload: "first"})
		if got := other.Messages(); !slices.Equal(got, []string{"first"}) {
			t.Errorf("subscriber of other-topic heard %q, want only its own topic", got)
		}
	})

	t.Run("cancel stops delivery", func(t *testing.T) {
		t.Parallel()
		bus := newBus(t)
		a := bus.Instance(t)
		gone, stays := Listen(t, a, "t"), Listen(t, a, "t")
		gone.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
		stays.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
		gone.Cancel()
		if err := a.Publish(ctx, "t", "after"); err != nil {
			t.Fatal(err)
		}
		stays.WaitFor(t, ports.Notice{Kind: ports.NoticeMessage, Payload: "after"})
		if got := gone.Messages(); len(got) != 0 {
			t.Fatalf("a cancelled subscription heard %q", got)
		}
	})

	t.Run("bad topics and payloads are refused", func(t *testing.T) {
		t.Parallel()
		a := newBus(t).Instance(t)
		for _, topic := range []string{"", "Upper", "with space", "new\nline", string(make([]byte, 65))} {
			if err := a.Publish(ctx, topic, "p"); err == nil {
				t.Errorf("Publish to topic %q succeeded", topic)
			}
		}
		if err := a.Publish(ctx, "t", string(make([]byte, ports.MaxNoticePayload+1))); err == nil {
			t.Error("Publish of an oversized payload succeeded")
		}
	})

	t.Run("a lost connection is reported and delivery resumes", func(t *testing.T) {
		t.Parallel()
		bus := newBus(t)
		if bus.Cut == nil {
			t.Skip("the adapter has no connection to lose")
		}
		a, b := bus.Instance(t), bus.Instance(t)
		onB := Listen(t, b, "t")
		onB.WaitFor(t, ports.Notice{Kind: ports.NoticeListening})
		bus.Cut(t)
		onB.WaitFor(t, ports.Notice{Kind: ports.NoticeDeaf})
		// NoticeListening comes again only after NoticeDeaf: it is the
		// second one in the record.
		onB.WaitForCount(t, ports.Notice{Kind: ports.NoticeListening}, 2)
		// A notice published now is heard. Publishing may itself meet a
		// connection the cut closed: a failed Publish is retried.
		deadline := time.Now().Add(waitLimit)
		for {
			if err := a.Publish(ctx, "t", "after the cut"); err == nil {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("Publish still fails after the cut: %v", err)
			}
		}
		onB.WaitFor(t, ports.Notice{Kind: ports.NoticeMessage, Payload: "after the cut"})
	})
}

// waitLimit bounds every wait for a notice.
const waitLimit = 15 * time.Second

// NoticeRecorder keeps what one subscription heard.
type NoticeRecorder struct {
	cancel func()

	mu      sync.Mutex
	notices []ports.Notice
	changed chan struct{}
}

// Listen subscribes to topic on n and records what it hears until t ends.
func Listen(t *testing.T, n ports.Notices, topic string) *NoticeRecorder {
	t.Helper()
	r := &NoticeRecorder{changed: make(chan struct{})}
	r.cancel = n.Subscribe(topic, func(no ports.Notice) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.notices = append(r.notices, no)
		close(r.changed)
		r.changed = make(chan struct{})
	})
	t.Cleanup(r.cancel)
	return r
}

// Cancel ends the subscription.
func (r *NoticeRecorder) Cancel() { r.cancel() }

// Messages returns the payloads heard, in order.
func (r *NoticeRecorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.notices {
		if n.Kind == ports.NoticeMessage {
			out = append(out, n.Payload)
		}
	}
	return out
}

// Notices returns everything heard, in order.
func (r *NoticeRecorder) Notices() []ports.Notice {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.notices)
}

// WaitFor fails t unless want is heard within the wait limit.
func (r *NoticeRecorder) WaitFor(t *testing.T, want ports.Notice) {
	t.Helper()
	r.WaitForCount(t, want, 1)
}

// WaitForCount fails t unless want is heard count times within the limit.
func (r *NoticeRecorder) WaitForCount(t *testing.T, want ports.Notice, count int) {
	t.Helper()
	timeout := time.NewTimer(waitLimit)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		seen := 0
		for _, n := range r.notices {
			if n == want {
				seen++
			}
		}
		changed := r.changed
		r.mu.Unlock()
		if seen >= count {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("waited %s for %d of %+v; heard %+v", waitLimit, count, want, r.Notices())
		}
	}
}
