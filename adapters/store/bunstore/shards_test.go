package bunstore

import (
	"slices"
	"testing"
)

// The picker hands out every shard once before any twice, and a shard
// given back is the next one taken.
func TestShardPickerSpreadsCreates(t *testing.T) {
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
	p.give(5)
	if k := p.take(); k != 5 {
		t.Fatalf("after shard 5 was given back, take gave %d", k)
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
