package conformance

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/ports"
)

// NewIdempotencyStore builds a store for one subtest. advance moves the
// store's clock forward; it is nil for a store whose expiries follow a clock
// the test cannot move (such as Redis's own), and the suite then waits for a
// short expiry, polling with a deadline.
type NewIdempotencyStore func(t *testing.T) (s ports.IdempotencyStore, advance func(time.Duration))

// RunIdempotencyStore checks that a ports.IdempotencyStore lets exactly one
// reservation of a key through, hands the others the record there, replays
// completed responses unchanged, and frees keys on Release and on expiry.
// Every subtest gets its own store and keys, so they run in parallel.
func RunIdempotencyStore(t *testing.T, newStore NewIdempotencyStore) {
	t.Helper()
	ctx := context.Background()
	setup := func(t *testing.T) (ports.IdempotencyStore, func(time.Duration)) {
		t.Helper()
		t.Parallel()
		return newStore(t)
	}

	t.Run("first reserve wins", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("first")
		rec := mustReserve(t, s, key, []byte("fp"), time.Minute)
		if rec.Done || !bytes.Equal(rec.Fingerprint, []byte("fp")) {
			t.Fatalf("Reserve returned %+v, want an in-progress record with fingerprint %q", rec, "fp")
		}
	})

	t.Run("second reserve sees the in-progress record", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("in-progress")
		mustReserve(t, s, key, []byte("first"), time.Minute)
		rec := expectTaken(t, s, key, []byte("second"))
		if rec.Done {
			t.Fatalf("record = %+v, want in progress", rec)
		}
		if !bytes.Equal(rec.Fingerprint, []byte("first")) {
			t.Fatalf("fingerprint = %q, want the first request's %q", rec.Fingerprint, "first")
		}
	})

	t.Run("completed record replays byte for byte", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("complete")
		fp := []byte{0, 1, 2, 0xfe, 0xff}
		mustReserve(t, s, key, fp, time.Minute)
		want := sampleRecord(fp)
		mustComplete(t, s, key, want, time.Minute)
		got := expectTaken(t, s, key, []byte("other"))
		expectRecord(t, got, want)
	})

	t.Run("completed record with empty response", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("complete-empty")
		mustReserve(t, s, key, []byte("fp"), time.Minute)
		want := ports.IdempotencyRecord{Fingerprint: []byte("fp"), Done: true, Status: 204}
		mustComplete(t, s, key, want, time.Minute)
		got := expectTaken(t, s, key, []byte("fp"))
		expectRecord(t, got, want)
	})

	t.Run("complete stores even when the reservation is gone", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("complete-gone")
		mustReserve(t, s, key, []byte("fp"), time.Minute)
		mustRelease(t, s, key)
		want := sampleRecord([]byte("fp"))
		mustComplete(t, s, key, want, time.Minute)
		expectRecord(t, expectTaken(t, s, key, []byte("fp")), want)
	})

	t.Run("release frees the key", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("release")
		mustReserve(t, s, key, []byte("first"), time.Minute)
		mustRelease(t, s, key)
		rec := mustReserve(t, s, key, []byte("again"), time.Minute)
		if !bytes.Equal(rec.Fingerprint, []byte("again")) {
			t.Fatalf("fingerprint = %q, want %q", rec.Fingerprint, "again")
		}
		expectTaken(t, s, key, []byte("third"))
		mustRelease(t, s, key)
		mustRelease(t, s, key) // releasing a free key is not an error
	})

	t.Run("release frees a completed key", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("release-done")
		mustReserve(t, s, key, []byte("fp"), time.Minute)
		mustComplete(t, s, key, sampleRecord([]byte("fp")), time.Minute)
		mustRelease(t, s, key)
		mustReserve(t, s, key, []byte("fp"), time.Minute)
	})

	t.Run("keys are independent", func(t *testing.T) {
		s, _ := setup(t)
		a, b := uniqueKey("a"), uniqueKey("b")
		mustReserve(t, s, a, []byte("A"), time.Minute)
		mustReserve(t, s, b, []byte("B"), time.Minute)
		want := sampleRecord([]byte("A"))
		mustComplete(t, s, a, want, time.Minute)
		if rec := expectTaken(t, s, b, []byte("x")); rec.Done || !bytes.Equal(rec.Fingerprint, []byte("B")) {
			t.Fatalf("b's record = %+v, want in progress with fingerprint %q", rec, "B")
		}
		mustRelease(t, s, b)
		expectRecord(t, expectTaken(t, s, a, []byte("x")), want)
		mustReserve(t, s, b, []byte("B2"), time.Minute)
	})

	t.Run("returned records are copies", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("copy")
		fp := []byte("fingerprint")
		rec := mustReserve(t, s, key, fp, time.Minute)
		fp[0] = 'X'
		if len(rec.Fingerprint) > 0 {
			rec.Fingerprint[1] = 'Y'
		}
		taken := expectTaken(t, s, key, []byte("other"))
		if !bytes.Equal(taken.Fingerprint, []byte("fingerprint")) {
			t.Fatalf("fingerprint = %q after changing the caller's slices, want %q", taken.Fingerprint, "fingerprint")
		}

		given := sampleRecord([]byte("fingerprint"))
		mustComplete(t, s, key, given, time.Minute)
		given.Fingerprint[0] = 'X'
		given.Headers["Content-Type"] = "changed"
		given.Headers["X-Added"] = "added"
		given.Body[0] = 'X'
		want := sampleRecord([]byte("fingerprint"))
		got := expectTaken(t, s, key, []byte("other"))
		expectRecord(t, got, want)

		got.Fingerprint[0] = 'Z'
		got.Headers["Content-Type"] = "changed again"
		delete(got.Headers, "Location")
		got.Body[0] = 'Z'
		got.Status = 500
		expectRecord(t, expectTaken(t, s, key, []byte("other")), want)
	})

	t.Run("records expire after their ttl", func(t *testing.T) {
		s, advance := setup(t)
		if advance != nil {
			key, long := uniqueKey("short"), uniqueKey("long")
			mustReserve(t, s, key, []byte("fp"), time.Minute)
			mustReserve(t, s, long, []byte("fp"), time.Hour)
			advance(time.Minute - time.Second)
			expectTaken(t, s, key, []byte("fp"))
			advance(time.Second)
			mustReserve(t, s, key, []byte("fp"), time.Minute)
			expectTaken(t, s, long, []byte("fp"))

			// Complete's ttl replaces the reservation's.
			want := sampleRecord([]byte("fp"))
			mustComplete(t, s, key, want, time.Hour)
			advance(30 * time.Minute)
			expectRecord(t, expectTaken(t, s, key, []byte("fp")), want)
			advance(30 * time.Minute)
			mustReserve(t, s, key, []byte("fp"), time.Minute)
			mustReserve(t, s, long, []byte("fp"), time.Minute)
			return
		}
		const ttl = 100 * time.Millisecond
		key, long := uniqueKey("short"), uniqueKey("long")
		mustReserve(t, s, long, []byte("fp"), time.Hour)
		reserved := time.Now()
		mustReserve(t, s, key, []byte("fp"), ttl)
		_, ok, err := s.Reserve(ctx, key, []byte("fp"), ttl)
		if err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		// A slow machine may take longer than the ttl to get here; only a
		// free key well inside the ttl is wrong.
		if ok && time.Since(reserved) < ttl/2 {
			t.Fatalf("key free %s after reserving it for %s", time.Since(reserved), ttl)
		}
		if !ok {
			deadline := time.Now().Add(5 * time.Second)
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				_, ok, err := s.Reserve(ctx, key, []byte("fp"), time.Minute)
				if err != nil {
					t.Fatalf("Reserve: %v", err)
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("key reserved for %s still taken after 5s", ttl)
				}
				<-tick.C
			}
			if elapsed := time.Since(reserved); elapsed < ttl {
				t.Fatalf("key reserved for %s free after %s", ttl, elapsed)
			}
		}
		expectTaken(t, s, long, []byte("fp"))
	})

	t.Run("concurrent reservations let exactly one through", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("race")
		const n = 50
		type result struct {
			fp  []byte
			rec ports.IdempotencyRecord
			ok  bool
			err error
		}
		results := make([]result, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				fp := fmt.Appendf(nil, "request-%d", i)
				<-start
				rec, ok, err := s.Reserve(ctx, key, fp, time.Minute)
				results[i] = result{fp: fp, rec: rec, ok: ok, err: err}
			})
		}
		close(start)
		wg.Wait()
		var winner []byte
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("Reserve %d: %v", i, r.err)
			}
			if r.ok {
				if winner != nil {
					t.Fatalf("more than one reservation got true (%q and %q)", winner, r.fp)
				}
				winner = r.fp
			}
		}
		if winner == nil {
			t.Fatalf("none of %d reservations got true", n)
		}
		for i, r := range results {
			if r.ok {
				continue
			}
			if r.rec.Done || !bytes.Equal(r.rec.Fingerprint, winner) {
				t.Fatalf("Reserve %d returned %+v, want the winner's in-progress record %q", i, r.rec, winner)
			}
		}
	})

	t.Run("ttl must be positive", func(t *testing.T) {
		s, _ := setup(t)
		key := uniqueKey("ttl")
		for _, ttl := range []time.Duration{0, -time.Second} {
			if _, ok, err := s.Reserve(ctx, key, []byte("fp"), ttl); err == nil || ok {
				t.Fatalf("Reserve with ttl %s = (%v, %v), want an error", ttl, ok, err)
			}
		}
		mustReserve(t, s, key, []byte("fp"), time.Minute) // the refusals took nothing
		for _, ttl := range []time.Duration{0, -time.Second} {
			if err := s.Complete(ctx, key, sampleRecord([]byte("fp")), ttl); err == nil {
				t.Fatalf("Complete with ttl %s succeeded, want an error", ttl)
			}
		}
		if rec := expectTaken(t, s, key, []byte("fp")); rec.Done {
			t.Fatalf("record = %+v after refused Completes, want still in progress", rec)
		}
	})
}

// sampleRecord returns a completed response whose body is not valid UTF-8,
// so a store that mangles bytes shows it.
func sampleRecord(fp []byte) ports.IdempotencyRecord {
	return ports.IdempotencyRecord{
		Fingerprint: bytes.Clone(fp),
		Done:        true,
		Status:      201,
		Headers: map[string]string{
			"Content-Type": "application/json",
			"Location":     "/v1/profiles/42",
		},
		Body: []byte("{\"id\":42}\n\x00\xff\xfe"),
	}
}

func mustReserve(t *testing.T, s ports.IdempotencyStore, key string, fp []byte, ttl time.Duration) ports.IdempotencyRecord {
	t.Helper()
	rec, ok, err := s.Reserve(context.Background(), key, fp, ttl)
	if err != nil {
		t.Fatalf("Reserve(%s): %v", key, err)
	}
	if !ok {
		t.Fatalf("Reserve(%s) = false (record %+v), want true", key, rec)
	}
	return rec
}

func expectTaken(t *testing.T, s ports.IdempotencyStore, key string, fp []byte) ports.IdempotencyRecord {
	t.Helper()
	rec, ok, err := s.Reserve(context.Background(), key, fp, time.Minute)
	if err != nil {
		t.Fatalf("Reserve(%s): %v", key, err)
	}
	if ok {
		t.Fatalf("Reserve(%s) = true, want the key taken", key)
	}
	return rec
}

func mustComplete(t *testing.T, s ports.IdempotencyStore, key string, rec ports.IdempotencyRecord, ttl time.Duration) {
	t.Helper()
	if err := s.Complete(context.Background(), key, rec, ttl); err != nil {
		t.Fatalf("Complete(%s): %v", key, err)
	}
}

func mustRelease(t *testing.T, s ports.IdempotencyStore, key string) {
	t.Helper()
	if err := s.Release(context.Background(), key); err != nil {
		t.Fatalf("Release(%s): %v", key, err)
	}
}

// expectRecord compares byte for byte; an empty body or header set matches a
// missing one, as a store need not tell them apart.
func expectRecord(t *testing.T, got, want ports.IdempotencyRecord) {
	t.Helper()
	if !got.Done {
		t.Fatalf("record not done: %+v", got)
	}
	if got.Status != want.Status {
		t.Fatalf("status = %d, want %d", got.Status, want.Status)
	}
	if !bytes.Equal(got.Fingerprint, want.Fingerprint) {
		t.Fatalf("fingerprint = %q, want %q", got.Fingerprint, want.Fingerprint)
	}
	if !maps.Equal(got.Headers, want.Headers) {
		t.Fatalf("headers = %v, want %v", got.Headers, want.Headers)
	}
	if !bytes.Equal(got.Body, want.Body) {
		t.Fatalf("body = %q, want %q", got.Body, want.Body)
	}
}
