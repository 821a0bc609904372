package bunstore

import (
	"testing"
	"time"
)

// Claims start from the lowest id once a second, from the last id of a
// claim that came back full, and otherwise above the highest id claimed a
// second or more before.
func TestClaimFloorPassesOverWhatWasClaimedASecondAgo(t *testing.T) {
	t.Parallel()
	var f claimFloor
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	step := func(ms int, want string, n int, last string) {
		t.Helper()
		if got := f.from(at(ms)); got != want {
			t.Fatalf("claim at +%d ms starts above %q, want %q", ms, got, want)
		}
		f.claimed(at(ms), n, 3, last)
	}
	step(0, "", 2, "evt_02")     // the first claim sweeps
	step(400, "", 1, "evt_05")   // evt_02 was claimed under a second ago
	step(999, "", 0, "")         // still under a second
	step(1000, "", 3, "evt_09")  // a sweep again, which comes back full:
	step(1001, "evt_09", 3, "f") // it goes on from its last id,
	step(1002, "f", 1, "g")      // until a claim comes back short
	step(1399, "evt_02", 0, "")  // claimed at +0: passed over
	step(1400, "evt_05", 0, "")  // claimed at +400
	step(1999, "evt_05", 0, "")  // evt_09, f and g at +1000 and later
	step(2000, "", 0, "")        // a sweep
	step(2001, "f", 0, "")       // evt_09 and f at +1000 and +1001
	step(2002, "g", 0, "")       // g at +1002
	if len(f.recent) != 0 {
		t.Fatalf("%d claims are still kept, want none: every one is passed over", len(f.recent))
	}
}
