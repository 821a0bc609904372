package profilecache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/profilesvc/profilesvc/tests/poll"
)

// queued is how many readers wait for the next pipeline.
func (b *getBatch) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// Readers that arrive while a pipeline is in flight go out together in the
// next one, each gets its own key's answer, and no two pipelines overlap.
func TestGetBatchSendsWaitingReadersTogether(t *testing.T) {
	release := make(chan struct{})
	var inFlight, most atomic.Int32
	var sizes []int
	var sizesMu sync.Mutex
	b := &getBatch{send: func(ctx context.Context, keys []string) ([]getResult, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		if ctx.Err() != nil {
			t.Errorf("the pipeline's context is done: %v", ctx.Err())
		}
		sizesMu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(keys))
		sizesMu.Unlock()
		if first {
			<-release
		}
		out := make([]getResult, len(keys))
		for i, k := range keys {
			out[i].val = "value of " + k
		}
		return out, nil
	}}

	// The first reader's request ends while its pipeline is in flight: the
	// pipeline still answers everyone.
	ctx, cancel := context.WithCancel(context.Background())
	const readers = 20
	got := make([]string, readers+1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		got[0], _ = b.get(ctx, "k0")
	}()
	poll.Until(t, "the first pipeline", func() bool { sizesMu.Lock(); defer sizesMu.Unlock(); return len(sizes) == 1 })
	cancel()
	for i := 1; i <= readers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _ = b.get(context.Background(), fmt.Sprintf("k%d", i))
		}()
	}
	poll.Until(t, "the readers to queue", func() bool { return b.queued() == readers })
	close(release)
	wg.Wait()

	for i, v := range got {
		if want := fmt.Sprintf("value of k%d", i); v != want {
			t.Errorf("reader %d got %q, want %q", i, v, want)
		}
	}
	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != readers {
		t.Errorf("pipelines of %v keys, want one of 1 then one of %d", sizes, readers)
	}
	if most.Load() != 1 {
		t.Errorf("%d pipelines were in flight at once, want 1", most.Load())
	}
}

// A pipeline that fails fails each of its readers, and the next readers
// are sent (nothing stays queued behind a failure).
func TestGetBatchFailureFailsItsReadersOnly(t *testing.T) {
	down := errors.New("redis: no answer")
	var calls atomic.Int32
	b := &getBatch{send: func(_ context.Context, keys []string) ([]getResult, error) {
		if calls.Add(1) == 1 {
			return nil, down
		}
		out := make([]getResult, len(keys))
		for i, k := range keys {
			out[i] = getResult{val: k}
		}
		return out, nil
	}}
	if _, err := b.get(context.Background(), "a"); !errors.Is(err, down) {
		t.Fatalf("first get: %v, want the pipeline's error", err)
	}
	if v, err := b.get(context.Background(), "b"); err != nil || v != "b" {
		t.Fatalf("second get: %q %v, want b", v, err)
	}
	if b.queued() != 0 || b.running {
		t.Fatalf("after the readers: %d queued, running %v", b.queued(), b.running)
	}
}
