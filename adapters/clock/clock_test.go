package clock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
)

func TestSystemIsUTCAndCurrent(t *testing.T) {
	before := time.Now()
	got := clock.System{}.Now()
	after := time.Now()
	if got.Location() != time.UTC {
		t.Fatalf("location = %v, want UTC", got.Location())
	}
	if got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
		t.Fatalf("now = %v, not between %v and %v", got, before, after)
	}
}

func TestFakeAdvanceAndSet(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	f := clock.NewFake(start)
	if !f.Now().Equal(start) || f.Now().Location() != time.UTC {
		t.Fatalf("now = %v, want %v in UTC", f.Now(), start)
	}
	f.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !f.Now().Equal(want) {
		t.Fatalf("after advance now = %v, want %v", f.Now(), want)
	}
	later := time.Date(2031, 6, 7, 8, 9, 10, 0, time.UTC)
	f.Set(later)
	if !f.Now().Equal(later) {
		t.Fatalf("after set now = %v, want %v", f.Now(), later)
	}
}

func TestFakeConcurrentAdvance(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f := clock.NewFake(start)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			f.Advance(time.Second)
			_ = f.Now()
		})
	}
	wg.Wait()
	if want := start.Add(50 * time.Second); !f.Now().Equal(want) {
		t.Fatalf("now = %v, want %v", f.Now(), want)
	}
}
