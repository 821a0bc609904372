package ids_test

import (
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/profilesvc/profilesvc/adapters/clock"
	"github.com/profilesvc/profilesvc/adapters/ids"
	"github.com/profilesvc/profilesvc/ports"
)

var idPattern = regexp.MustCompile(`^usr_[0-9a-hjkmnp-tv-z]{26}$`)

func TestFormat(t *testing.T) {
	g := ids.NewULID(clock.System{})
	id := g.New("usr")
	if !idPattern.MatchString(id) {
		t.Fatalf("id %q does not look like usr_<lower-case ulid>", id)
	}
}

func TestConcurrentUniqueAndOrdered(t *testing.T) {
	for name, c := range map[string]ports.Clock{
		"system": clock.System{},
		// A frozen clock puts every id in one millisecond: only the monotonic
		// entropy keeps them ordered.
		"frozen": clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)),
	} {
		t.Run(name, func(t *testing.T) {
			g := ids.NewULID(c)
			const workers, perWorker = 20, 500
			results := make([][]string, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					out := make([]string, perWorker)
					for i := range out {
						out[i] = g.New("prf")
					}
					results[w] = out
				})
			}
			wg.Wait()
			seen := make(map[string]bool, workers*perWorker)
			for w, out := range results {
				if !sort.StringsAreSorted(out) {
					t.Fatalf("worker %d: ids are not in creation order", w)
				}
				for _, id := range out {
					if seen[id] {
						t.Fatalf("duplicate id %q", id)
					}
					seen[id] = true
				}
			}
			if len(seen) != workers*perWorker {
				t.Fatalf("got %d ids, want %d", len(seen), workers*perWorker)
			}
		})
	}
}

func TestSortsByClockTime(t *testing.T) {
	f := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	g := ids.NewULID(f)
	first := g.New("evt")
	f.Advance(time.Millisecond)
	second := g.New("evt")
	if first >= second {
		t.Fatalf("%q made before %q but does not sort before it", first, second)
	}
	// The timestamp part is the clock's time, so ids made a millisecond apart
	// differ in their first 10 characters.
	if first[:4+10] == second[:4+10] {
		t.Fatalf("timestamps of %q and %q are equal", first, second)
	}
}

func TestClockGoingBackwardsKeepsOrder(t *testing.T) {
	f := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC))
	g := ids.NewULID(f)
	first := g.New("evt")
	f.Advance(-time.Second)
	second := g.New("evt")
	if first >= second {
		t.Fatalf("after the clock stepped back %q does not sort after %q", second, first)
	}
}

func TestNoPrefix(t *testing.T) {
	id := ids.NewULID(clock.System{}).New("")
	if len(id) != 26 || strings.Contains(id, "_") {
		t.Fatalf("id without prefix = %q", id)
	}
}
