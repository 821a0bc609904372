package bunstore

import (
	"slices"
	"testing"
)

// The picker hands out every shard once before any twice, and a shard
// given back is the next one taken.
func TestShardPickerSpreadsCreates(t *testing.T) {
	t.Parallel()
	var p shardPicker
	var got []int
	for range profileShards {
		got = append(got, p.take())
	}
	slices.Sort(got)
	for i, k := range got {
		if k != i {
			t.Fatalf("%d takes gave shards %v, want each of 0..%d once", profileShards, got, profileShards-1)
		}
	}
	extra := p.take()
	if p.inUse[extra] != 2 {
		t.Fatalf("the 17th take gave shard %d, held %d times", extra, p.inUse[extra])
	}
	// A shard held once (not the one held twice: given back, it would
	// still be held as often as the others).
	back := (extra + 1) % profileShards
	p.give(back)
	if k := p.take(); k != back {
		t.Fatalf("after shard %d was given back, take gave %d", back, k)
	}
}

// ShardsHeld is how many creates of this process hold a shard.
func ShardsHeld() int {
	createShards.mu.Lock()
	defer createShards.mu.Unlock()
	n := 0
	for _, c := range createShards.inUse {
		n += c
	}
	return n
}
